package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// The Docker types keep secrets in plain strings (the runtime reads them
// as such), so instead of a Secret field they print through a redacted
// copy: fmt, slog and encoding/json never show a registry password or an
// inline TLS private key.

// registryPrint is Registry without methods, to print fields by default.
type registryPrint Registry

func (r Registry) redacted() registryPrint {
	p := registryPrint(r)
	p.Password = redact(p.Password)
	return p
}

// Format prints r with its password redacted, for every verb.
func (r Registry) Format(f fmt.State, verb rune) {
	formatAs(f, verb, r.redacted(), "config.registryPrint", "config.Registry")
}

// LogValue is r with its password redacted.
func (r Registry) LogValue() slog.Value { return slog.AnyValue(r.redacted()) }

// MarshalJSON encodes r with its password redacted. Registry is
// configuration, never a wire format, so nothing needs the clear value.
func (r Registry) MarshalJSON() ([]byte, error) { return json.Marshal(r.redacted()) }

// tlsPrint is DockerTLS without methods.
type tlsPrint DockerTLS

func (t DockerTLS) redacted() tlsPrint {
	p := tlsPrint(t)
	p.Key = redact(p.Key)
	return p
}

// Format prints t with an inline private key redacted, for every verb.
func (t DockerTLS) Format(f fmt.State, verb rune) {
	formatAs(f, verb, t.redacted(), "config.tlsPrint", "config.DockerTLS")
}

// LogValue is t with an inline private key redacted.
func (t DockerTLS) LogValue() slog.Value { return slog.AnyValue(t.redacted()) }

// MarshalJSON encodes t with an inline private key redacted.
func (t DockerTLS) MarshalJSON() ([]byte, error) { return json.Marshal(t.redacted()) }

// formatAs prints v as the verb and flags in f ask, naming the public type
// instead of the print copy's in %#v.
func formatAs(f fmt.State, verb rune, v any, from, to string) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), v)
	if verb == 'v' && f.Flag('#') {
		s = strings.Replace(s, from, to, 1)
	}
	_, _ = f.Write([]byte(s))
}
