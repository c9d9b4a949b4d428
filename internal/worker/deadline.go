package worker

import (
	"context"
	"errors"
	"time"
)

// InvocationMargin is how long before its context's deadline (a Lambda
// invocation's) a create stops waiting for its container to become stable:
// enough to record the attempt, set the message's retry delay and return,
// rather than be killed mid-write with the invocation. The SAM template
// sets the CreateWorker's timeout to create_start_timeout plus more than
// this, so the margin only bites when placing, pulling and creating took
// a large part of the invocation.
const InvocationMargin = 10 * time.Second

// errHandedBack: the invocation's deadline came before the container was
// stable. It is retryable: the next delivery adopts the container (its
// instance is already creating) and waits again, within max_attempts.
var errHandedBack = errors.New("the invocation's deadline drew near before the container was stable; handed back to the queue")

// waitCutoff is when waitStable must stop because of ctx's own deadline
// (minus InvocationMargin); ok is false when ctx has no deadline.
func waitCutoff(ctx context.Context) (cutoff time.Time, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}, false
	}
	return dl.Add(-InvocationMargin), true
}
