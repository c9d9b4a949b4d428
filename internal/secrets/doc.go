// Package secrets reads the values of the secrets templates name in
// secret_env: from a local file or the environment for `berth serve`, from
// SSM Parameter Store on AWS. Only the worker asks, when it makes a
// container; a value goes into that container's environment and nowhere
// else (not the instance, not an event, not a log line). Errors name a
// secret, never its value.
package secrets

import "errors"

// ErrNotFound is a secret no source has: the create that needs it cannot
// succeed until an operator adds it.
var ErrNotFound = errors.New("secret not found")
