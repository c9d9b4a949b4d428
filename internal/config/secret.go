package config

import (
	"fmt"
	"log/slog"
)

// redacted is what a secret prints as, wherever it is printed.
const redacted = "[redacted]"

// Secret is a string that never prints: fmt (every verb, %#v included),
// log/slog and encoding/json all see "[redacted]". Code that needs the
// value asks for it with Reveal, which makes each use easy to find.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]", for %#v.
func (s Secret) GoString() string { return redacted }

// Format writes "[redacted]" for every verb, so that %x, %q or %d cannot
// print the value either (fmt would otherwise format the string itself).
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue returns "[redacted]".
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON returns "[redacted]" as a JSON string; a secret is never
// serialised, so there is no matching UnmarshalJSON.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText returns "[redacted]" (used by encoders that prefer text, and
// by encoding/json for map keys).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// redact returns "[redacted]" for a non-empty secret and "" otherwise, so a
// printout still shows whether the value was set.
func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}
