package secrets

import (
	"errors"
	"fmt"
)

// publicError is a failed lookup as the container's owner may read it.
type publicError struct {
	msg string
	err error
}

func (e *publicError) Error() string { return e.msg }
func (e *publicError) Unwrap() error { return e.err }

// Public returns err, a source's failure to give secret name, as the owner
// of the container that needed it may read it (its status_reason and
// events): the secret's name and whether it is missing or the source
// failed. A source's own errors are for the server's log: they name where
// it looks (a file's path, a variable, a parameter) and carry its client's
// messages. The result unwraps to err, so errors.Is(…, ErrNotFound) holds.
func Public(name string, err error) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("secret %q could not be read: the secret source failed", name)
	if errors.Is(err, ErrNotFound) {
		msg = fmt.Sprintf("secret %q is not available", name)
	}
	return &publicError{msg: msg, err: err}
}
