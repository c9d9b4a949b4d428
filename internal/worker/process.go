package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// Result says what to do with a delivery: acknowledge it, or let it come
// back after Delay.
type Result struct {
	Ack   bool
	Delay time.Duration
	// Reason is why (for logs and tests): "done", "stale: …", "retry: …",
	// "failed: …".
	Reason string
	// Requeue, when set, replaces the redelivery: the caller sends this
	// fresh message (it carries its own delay) and then acknowledges the
	// delivery, so that a wait for an unavailable runtime does not count
	// toward the queue's dead-letter limit. Should the send fail, the
	// caller hands the delivery back after Delay instead.
	Requeue *queue.Outgoing
}

func ack(reason string) Result { return Result{Ack: true, Reason: reason} }

// errStale means the message's operation no longer applies to the
// instance; it is acknowledged, not retried.
type errStale struct{ why string }

func (e errStale) Error() string { return "stale: " + e.why }

func stale(format string, args ...any) error { return errStale{fmt.Sprintf(format, args...)} }

// Process handles one delivery. It never panics the caller's loop on bad
// input: an undecodable message is acknowledged and logged, since no retry
// can make it readable.
func (w *Worker) Process(ctx context.Context, d queue.Delivery) Result {
	msg, err := outbox.Decode(d.Body)
	if err != nil {
		w.log.ErrorContext(ctx, "dropping undecodable message", "message_id", d.MessageID, "error", err)
		w.metrics.Count("PoisonMessages", 1)
		return ack("poison: " + err.Error())
	}
	log := w.log.With("request_id", msg.RequestID, "outbox_id", msg.OutboxID, "instance_id", msg.InstanceID,
		"op", string(msg.Op), "attempt", d.ReceiveCount)
	if msg.TraceContext != "" {
		log = log.With("trace", msg.TraceContext)
	}
	if !d.SentAt.IsZero() {
		w.metrics.Duration("QueueAge", w.now().Sub(d.SentAt), "Op", string(msg.Op))
	}
	if d.ReceiveCount == 1 && !msg.CommittedAt.IsZero() {
		w.metrics.Duration("DispatchLatency", w.now().Sub(msg.CommittedAt), "Op", string(msg.Op), "Stage", "worker")
	}
	attempt := max(d.ReceiveCount, 1) + msg.PriorAttempts()
	item, err := w.store.GetOutbox(ctx, msg.OutboxID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		log.InfoContext(ctx, "outbox item gone; acknowledging")
		return ack("stale: outbox item gone")
	case err != nil:
		return w.retry(ctx, log, msg, attempt, fmt.Errorf("reading outbox item: %w", err))
	case item.State == container.OutboxDone || item.State == container.OutboxFailed:
		log.InfoContext(ctx, "outbox item already finished; duplicate delivery", "state", item.State)
		return ack("stale: outbox item " + string(item.State))
	}

	if msg.Op == container.OpDeliver {
		return w.processDelivery(ctx, log, msg, d, item)
	}
	start := w.now()
	// An item still pending was handed over by a dispatcher that leaves
	// the dispatch mark to the claim (the local server's); one already
	// dispatched costs the claim nothing more.
	mark := ""
	if item.State == container.OutboxPending {
		mark = msg.OutboxID
	}
	switch msg.Op {
	case container.OpCreate:
		err = w.create(ctx, log, msg, mark)
	case container.OpStart:
		err = w.start(ctx, log, msg, mark)
	case container.OpStop:
		err = w.stop(ctx, log, msg, mark)
	case container.OpDelete:
		err = w.delete(ctx, log, msg, mark)
	case container.OpCleanupStop, container.OpCleanupDelete, container.OpGroupStop, container.OpGroupDelete:
		err = w.cleanup(ctx, log, msg)
	}
	var st errStale
	switch {
	case err == nil:
		w.metrics.Duration(opMetric(msg.Op), w.now().Sub(start))
		w.markDone(ctx, log, msg.OutboxID)
		log.InfoContext(ctx, "operation done", "duration_ms", w.now().Sub(start).Milliseconds())
		return ack("done")
	case errors.As(err, &st):
		w.markDone(ctx, log, msg.OutboxID)
		log.InfoContext(ctx, "operation no longer applies; acknowledged", "why", st.why)
		return ack(err.Error())
	case runtime.IsUnavailable(err):
		return w.waitForRuntime(ctx, log, msg, d, attempt, err)
	case runtime.Retryable(err) && !errors.Is(err, errPermanent):
		return w.retry(ctx, log, msg, attempt, err)
	default:
		w.fail(ctx, log, msg, attempt, err)
		w.stopUnstable(ctx, log, err)
		return ack("failed: " + err.Error())
	}
}

func opMetric(op container.Op) string {
	switch op {
	case container.OpCreate:
		return "CreateDuration"
	case container.OpStart:
		return "StartDuration"
	case container.OpStop:
		return "StopDuration"
	case container.OpCleanupStop, container.OpCleanupDelete, container.OpGroupStop, container.OpGroupDelete:
		return "CleanupDuration"
	}
	return "DeleteDuration"
}

// errPermanent marks failures no retry can mend although the runtime did not
// classify them (e.g. the container exited at once under a create).
var errPermanent = errors.New("permanent")

func (w *Worker) markDone(ctx context.Context, log *slog.Logger, id string) {
	if err := w.store.MarkDone(ctx, id, w.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		// The work is done; a redelivery finds it done by the instance's
		// status and acknowledges it.
		log.WarnContext(ctx, "marking outbox item done", "error", err)
	}
}

// retry records the attempt and asks for a redelivery after the backoff.
// The last attempt fails the instance and leaves the message unacknowledged
// so that the queue moves it to the dead-letter queue.
func (w *Worker) retry(ctx context.Context, log *slog.Logger, msg outbox.Message, attempt int, cause error) Result {
	if attempt >= w.maxAttempts {
		w.fail(ctx, log, msg, attempt, fmt.Errorf("gave up after %d attempts: %w", attempt, cause))
		w.metrics.Count("DeadLettered", 1, "Op", string(msg.Op))
		return Result{Ack: false, Delay: 0, Reason: "dead-letter: " + cause.Error()}
	}
	if err := w.store.MarkAttempt(ctx, msg.OutboxID, attempt, cause.Error(), w.now()); err != nil {
		log.WarnContext(ctx, "recording attempt", "error", err)
	}
	delay := w.backoff(attempt)
	w.metrics.Count("Retries", 1, "Op", string(msg.Op))
	log.WarnContext(ctx, "operation failed; will retry", "error", cause, "retry_in_ms", delay.Milliseconds())
	return Result{Ack: false, Delay: delay, Reason: "retry: " + cause.Error()}
}

// waitForRuntime answers a runtime that could not be reached: the
// operation is sent again as a fresh message after a capped exponential
// backoff, spending no attempt, until UnavailableRetryFor has passed since
// the runtime was first found unavailable; then the instance is failed.
func (w *Worker) waitForRuntime(ctx context.Context, log *slog.Logger, msg outbox.Message, d queue.Delivery, attempt int,
	cause error) Result {
	now := w.now()
	u, waited := continueWait(msg, now, attempt-1)
	if waited >= w.unavailFor {
		// The instance's owner reads the reason: the runtime's summary, not
		// its client's message (a socket, an address), which is logged.
		log.ErrorContext(ctx, "runtime unavailable; giving up", "error", cause, "unavailable_since", u.Since)
		err := fmt.Errorf("runtime unavailable for %s: %s", waited.Truncate(time.Second), runtime.Summary(cause))
		w.fail(ctx, log, msg, attempt, err)
		w.metrics.Count("UnavailableGaveUp", 1, "Op", string(msg.Op))
		return ack("failed: " + err.Error())
	}
	if err := w.store.MarkAttempt(ctx, msg.OutboxID, u.PriorAttempts, cause.Error(), now); err != nil {
		log.WarnContext(ctx, "recording the runtime's unavailability", "error", err)
	}
	res, requeued := w.resend(ctx, log, msg, u, "u", "retry: runtime unavailable: "+cause.Error())
	if requeued {
		w.metrics.Count("UnavailableRetries", 1, "Op", string(msg.Op))
		log.WarnContext(ctx, "runtime unavailable; will retry", "error", cause, "retry_in_ms", res.Delay.Milliseconds(),
			"unavailable_since", u.Since, "message_id", d.MessageID)
	}
	return res
}

// ownedStatuses are the statuses in which an operation still speaks for
// the instance. Once a later request has moved it on (a stop while the
// create still waited for stability, say), the operation's failure is its
// own: the newer request's worker reports on the instance.
var ownedStatuses = map[container.Op][]fsm.Status{
	container.OpCreate: {fsm.Pending, fsm.Creating, fsm.Running},
	container.OpStart:  {fsm.StartPending, fsm.Starting, fsm.Running},
	container.OpStop:   {fsm.StopPending, fsm.Stopping},
	container.OpDelete: {fsm.DeletePending, fsm.Deleting},
}

// fail moves the instance to failed with the error as status_reason and
// marks the outbox item failed. Nothing is dropped silently: the instance
// shows why, the event history records it.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, msg outbox.Message, attempt int, cause error) {
	log.ErrorContext(ctx, "operation failed", "error", cause)
	if err := w.store.MarkFailed(ctx, msg.OutboxID, attempt, cause.Error(), w.now()); err != nil {
		log.WarnContext(ctx, "marking outbox item failed", "error", err)
	}
	if msg.Op.Cleanup() {
		// A policy that could not be applied leaves the member as it is:
		// its own status is not the cleanup's to judge.
		return
	}
	// Only while the operation still speaks for the instance (ownedStatuses).
	// A create or start that failed may have run the process (a start
	// timeout, a crash loop): its last words say why.
	_, err := w.m.Fail(ctx, msg.InstanceID, manager.Failure{Reason: fmt.Sprintf("%s failed: %v", msg.Op, cause),
		At: w.now().UTC(), While: ownedStatuses[msg.Op], KeepLastWords: msg.Op == container.OpCreate || msg.Op == container.OpStart})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		log.WarnContext(ctx, "failing the instance", "error", err)
	}
}
