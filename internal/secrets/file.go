package secrets

import (
	"context"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// File reads secrets from a YAML (or JSON) file of name: value, read at
// every lookup so that an edited file takes effect without a restart. The
// file must not be readable by group or others.
type File struct {
	Path string
}

// Secret returns the value of name in the file.
func (f File) Secret(_ context.Context, name string) (string, error) {
	info, err := os.Stat(f.Path)
	if err != nil {
		return "", fmt.Errorf("secrets file: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("secrets file %s is readable by others (mode %04o): make it 0600", f.Path, perm)
	}
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("secrets file: %w", err)
	}
	var values map[string]string
	if err := yaml.Unmarshal(raw, &values); err != nil {
		// yaml's message may quote the offending line: a value.
		return "", fmt.Errorf("secrets file %s is not a map of name to string value", f.Path)
	}
	v, ok := values[name]
	if !ok {
		return "", fmt.Errorf("secret %q in %s: %w", name, f.Path, ErrNotFound)
	}
	return v, nil
}
