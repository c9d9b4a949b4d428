package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
)

// Job is one queue delivery on its way through the worker's middleware,
// with what the layers outside have found out about it.
type Job struct {
	// Delivery is what the queue handed over.
	Delivery queue.Delivery
	// Msg is the decoded message and Log the logger with its fields (set by
	// the poison check, which decodes).
	Msg outbox.Message
	Log *slog.Logger
	// Attempt counts this delivery among the operation's attempts, those
	// spent by the messages it was re-sent from included.
	Attempt int
	// Item is the message's outbox item (set by the duplicate check).
	Item container.OutboxItem
}

// mark is the outbox item a claim marks dispatched: an item still pending
// was handed over by a dispatcher that leaves the dispatch mark to the
// claim (the local server's); one already dispatched costs the claim
// nothing more.
func (j *Job) mark() string {
	if j.Item.State == container.OutboxPending {
		return j.Msg.OutboxID
	}
	return ""
}

// Handler carries out a job. nil means its operation is done; an error is
// either what went wrong, for the middleware outside to classify, or the
// delivery's outcome once a layer has decided it (Settle), which the
// layers further out pass on untouched.
type Handler func(ctx context.Context, j *Job) error

// Middleware wraps a Handler with one concern (watermill's shape).
type Middleware func(Handler) Handler

// chain wraps h in mws, the first the outermost.
func chain(h Handler, mws ...Middleware) Handler {
	for _, mw := range slices.Backward(mws) {
		if mw != nil {
			h = mw(h)
		}
	}
	return h
}

// settled is a decided outcome travelling outward as an error.
type settled struct{ res Result }

func (s settled) Error() string { return s.res.Reason }

// Settle is how a middleware decides what becomes of the delivery: Process
// returns r.
func Settle(r Result) error { return settled{r} }

// decided reports whether err leaves nothing to classify: an operation done
// (nil) or an outcome settled.
func decided(err error) bool {
	var s settled
	return err == nil || errors.As(err, &s)
}

// resultOf is what Process returns for its chain's outcome. The fail
// middleware settles every error it sees, so an unsettled one only comes
// from a chain without it: it is handed back, as the safe default.
func resultOf(err error) Result {
	var s settled
	switch {
	case err == nil:
		return ack("done")
	case errors.As(err, &s):
		return s.res
	}
	return Result{Reason: "unsettled: " + err.Error()}
}
