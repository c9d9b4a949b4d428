package config

import (
	"fmt"
	"strings"
)

// FieldError is one invalid value. It names the key and where the value
// came from, because the same key can be set by a default, the file or a
// variable, and the person fixing it needs to know which one to edit.
type FieldError struct {
	// Key is the dotted YAML path, e.g. container.create_queue_max_pending
	// or docker.hosts[1].endpoint.
	Key string
	// Source is "default", "<file>:<line>" or the environment variable.
	Source string
	Err    error
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%v", e.Err)
	if e.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	return b.String()
}

func (e *FieldError) Unwrap() error { return e.Err }

// sourceDefault is the source of a value nobody set.
const sourceDefault = "default"

// sources remembers where each key's value came from, so that validation,
// which runs on the merged result, can still say which file line or which
// variable to fix.
type sources struct {
	byKey map[string]string
}

func newSources() *sources { return &sources{byKey: make(map[string]string)} }

func (s *sources) set(key, src string) { s.byKey[key] = src }

// of returns the source of key: its own if it was set, else that of the
// nearest enclosing key that was (a missing docker.hosts[0].name is
// reported at the line of docker.hosts[0]), else "default".
func (s *sources) of(key string) string {
	for k := key; k != ""; k = parentKey(k) {
		if src, ok := s.byKey[k]; ok {
			return src
		}
	}
	return sourceDefault
}

// parentKey returns the enclosing key: "a.b[2]" → "a.b", "a.b" → "a".
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i >= 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// override records that key was replaced as a whole by src: the file lines
// of its old elements (key[0], key.x) no longer describe it.
func (s *sources) override(key, src string) {
	for k := range s.byKey {
		if strings.HasPrefix(k, key+"[") || strings.HasPrefix(k, key+".") {
			delete(s.byKey, k)
		}
	}
	s.byKey[key] = src
}
