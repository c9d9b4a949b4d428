package store

// rule is one thing instance writes must keep true, in one place: it adds
// the parts it needs to a write once the instance and its event are as the
// write leaves them. A rule embeds noRule and implements only the kinds of
// write it takes part in; an error refuses the write (wrap
// ErrInvalidParams for the caller's mistakes).
type rule interface {
	create(w *Write, p CreateParams) error
	transition(w *Write, p TransitionParams) error
	remove(w *Write, p DeleteParams) error
}

// rules are applied in this order, which is the order of a write's parts.
// A new rule is a file with its type and a line here.
var rules = []rule{
	templateRule{},
	admissionRule{},
	quotaRule{},
	usageRule{},
	idempotencyRule{},
	outboxRule{},
	deliveryRule{},
	completionRule{},
	dispatchRule{},
	expiryRule{},
	retentionRule{},
	restartRule{},
}

// noRule takes part in no kind of write.
type noRule struct{}

func (noRule) create(*Write, CreateParams) error         { return nil }
func (noRule) transition(*Write, TransitionParams) error { return nil }
func (noRule) remove(*Write, DeleteParams) error         { return nil }
