package secrets

import (
	"context"
	"fmt"
	"strings"
)

// Env reads secret name from the environment variable Prefix+NAME, where
// NAME is name upper-cased with '.' and '-' as '_' (db-password →
// BERTH_SECRET_DB_PASSWORD).
type Env struct {
	Prefix string
	// Lookup reads a variable; os.LookupEnv in production.
	Lookup func(string) (string, bool)
}

// Var returns the environment variable that holds name.
func (e Env) Var(name string) string {
	return e.Prefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(name))
}

// Secret returns the value of name's variable.
func (e Env) Secret(_ context.Context, name string) (string, error) {
	v, ok := e.Lookup(e.Var(name))
	if !ok {
		return "", fmt.Errorf("secret %q (variable %s): %w", name, e.Var(name), ErrNotFound)
	}
	return v, nil
}
