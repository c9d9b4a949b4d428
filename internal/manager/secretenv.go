package manager

import (
	"slices"

	"github.com/berth-io/berth/internal/container"
)

// validSecretEnv checks a template's secret_env: variable names as for
// env, secret names a source can hold, and no variable that env or
// user_env also sets (which value would win would be a guess).
func validSecretEnv(f *fields, t container.Template) {
	if len(t.Env)+len(t.SecretEnv) > maxEnv {
		f.add("secret_env", "env and secret_env together hold at most %d variables", maxEnv)
	}
	for k, name := range t.SecretEnv {
		field := "secret_env." + k
		switch {
		case !envName.MatchString(k):
			f.add(field, "invalid variable name")
		case !container.ValidSecretName(name):
			f.add(field, "secret name must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit")
		}
		if _, dup := t.Env[k]; dup {
			f.add(field, "is also set in env")
		}
		if slices.Contains(t.UserEnv, k) {
			f.add(field, "is also in user_env: users may not replace a secret")
		}
	}
}
