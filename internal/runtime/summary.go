package runtime

import "errors"

// Summary is the operation, instance, node and kind of e, without its
// cause: what an instance's owner may read of a runtime that could not be
// reached. The cause (the client's own message) may name the engine's
// socket, an API server's address or a host path, and is for the server's
// log.
func (e *Error) Summary() string {
	msg := e.Op
	if e.Instance != "" {
		msg += " instance " + e.Instance
	}
	if e.Node != "" {
		msg += " on " + e.Node
	}
	return msg + ": " + e.Kind.Error()
}

// Summary returns err's Summary when it holds an *Error, and a plain
// "the runtime could not be reached" otherwise (an unclassified error's
// text is never passed on).
func Summary(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Summary()
	}
	return "the runtime could not be reached"
}
