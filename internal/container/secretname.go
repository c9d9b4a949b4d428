package container

import "regexp"

// secretName is a secret name as templates may write it: what SSM allows
// in a parameter name below a prefix, and what a file key or an
// environment variable can carry after mapping.
var secretName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidSecretName reports whether name may be used in a template's
// secret_env.
func ValidSecretName(name string) bool { return secretName.MatchString(name) }
