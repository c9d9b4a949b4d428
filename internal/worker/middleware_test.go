package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// Unit tests of each middleware on its own, around a stub handler, with a
// store and a manager that record what they were asked.

// books is a Store that keeps one outbox item and records the bookkeeping
// (the middleware call it synchronously: no lock needed).
type books struct {
	item  container.OutboxItem
	err   error // GetOutbox's
	calls []string
}

var _ Store = (*books)(nil)

func (b *books) called(s string) bool { return slices.Contains(b.calls, s) }

func (b *books) GetInstance(context.Context, string) (container.Instance, error) {
	return container.Instance{}, store.ErrNotFound
}

func (b *books) GetOutbox(_ context.Context, id string) (container.OutboxItem, error) {
	if b.err != nil {
		return container.OutboxItem{}, b.err
	}
	if b.item.ID != id {
		return container.OutboxItem{}, store.ErrNotFound
	}
	return b.item, nil
}

func (b *books) MarkDone(context.Context, string, time.Time) error {
	b.calls = append(b.calls, "done")
	return nil
}

func (b *books) MarkAttempt(context.Context, string, int, string, time.Time) error {
	b.calls = append(b.calls, "attempt")
	return nil
}

func (b *books) MarkFailed(context.Context, string, int, string, time.Time) error {
	b.calls = append(b.calls, "failed")
	return nil
}

// failures is a Manager that only records Fail.
type failures struct {
	Manager
	failed []string
}

func (f *failures) Fail(_ context.Context, id string, fl manager.Failure) (bool, error) {
	f.failed = append(f.failed, id+": "+fl.Reason)
	return true, nil
}

// mwRig is a worker on books and failures whose metrics go to a buffer.
type mwRig struct {
	w       *Worker
	books   *books
	m       *failures
	metrics *bytes.Buffer
}

func newMWRig(t *testing.T) *mwRig {
	t.Helper()
	r := &mwRig{books: &books{}, m: &failures{}, metrics: &bytes.Buffer{}}
	r.w = New(Options{Manager: r.m, Store: r.books, Metrics: metrics.New(r.metrics, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxAttempts: 3,
		Backoff: func(int) time.Duration { return time.Second }, UnavailableRetryFor: time.Hour, DeliveryRetryFor: time.Hour})
	return r
}

// job is a decoded job for op, as the poison check leaves it.
func (r *mwRig) job(op container.Op) *Job {
	msg := outbox.Message{OutboxID: "ob-1", InstanceID: "in-1", Op: op, CommittedAt: time.Now()}
	return &Job{Delivery: queue.Delivery{MessageID: "m-1", ReceiveCount: 1, SentAt: time.Now()}, Msg: msg,
		Log: r.w.log, Attempt: 1}
}

// stub is a handler that returns err and counts its calls.
func stub(err error, calls *int) Handler {
	return func(context.Context, *Job) error { *calls++; return err }
}

func resultFor(t *testing.T, err error) Result {
	t.Helper()
	var s settled
	if !errors.As(err, &s) {
		t.Fatalf("not settled: %v", err)
	}
	return s.res
}

func TestPoisonAcknowledgesWhatCannotBeDecoded(t *testing.T) {
	r := newMWRig(t)
	var calls int
	res := resultFor(t, r.w.decode(stub(nil, &calls))(context.Background(), &Job{Delivery: queue.Delivery{Body: []byte("{")}}))
	if !res.Ack || !strings.HasPrefix(res.Reason, "poison: ") || calls != 0 {
		t.Errorf("undecodable: %+v, handler called %d times", res, calls)
	}
	if !strings.Contains(r.metrics.String(), "PoisonMessages") {
		t.Error("no PoisonMessages metric")
	}
	body, _ := outbox.Message{OutboxID: "ob-1", InstanceID: "in-1", Op: container.OpStop,
		Unavailable: &outbox.Unavailable{PriorAttempts: 2}}.Encode()
	var seen *Job
	h := r.w.decode(func(_ context.Context, j *Job) error { seen = j; return nil })
	if err := h(context.Background(), &Job{Delivery: queue.Delivery{Body: body, ReceiveCount: 1}}); err != nil {
		t.Fatal(err)
	}
	if seen.Msg.OutboxID != "ob-1" || seen.Log == nil || seen.Attempt != 3 {
		t.Errorf("decoded job: %+v; want its message, a logger and attempt 1+2", seen)
	}
}

func TestMeasureEmitsOnlyForWhatIsDone(t *testing.T) {
	for _, tc := range []struct {
		op   container.Op
		err  error
		want string
		not  string
	}{
		{container.OpCreate, nil, "CreateDuration", ""},
		{container.OpDeliver, nil, "WebhookDelivered", "DeleteDuration"},
		{container.OpStop, errors.New("x"), "QueueAge", "StopDuration"},
	} {
		r := newMWRig(t)
		var calls int
		if err := r.w.measure(stub(tc.err, &calls))(context.Background(), r.job(tc.op)); !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v changed to %v", tc.op, tc.err, err)
		}
		out := r.metrics.String()
		if !strings.Contains(out, tc.want) || !strings.Contains(out, "DispatchLatency") || tc.not != "" && strings.Contains(out, tc.not) {
			t.Errorf("%s (%v): metrics %s; want %s, not %q", tc.op, tc.err, out, tc.want, tc.not)
		}
	}
}

func TestDedupeStopsDuplicates(t *testing.T) {
	r := newMWRig(t)
	ctx := context.Background()
	var calls int
	h := r.w.dedupe(stub(nil, &calls))
	if res := resultFor(t, h(ctx, r.job(container.OpStart))); !res.Ack || res.Reason != "stale: outbox item gone" {
		t.Errorf("item gone: %+v", res)
	}
	r.books.item = container.OutboxItem{ID: "ob-1", State: container.OutboxDone}
	if res := resultFor(t, h(ctx, r.job(container.OpStart))); !res.Ack || res.Reason != "stale: outbox item done" {
		t.Errorf("item done: %+v", res)
	}
	if calls != 0 {
		t.Fatalf("the handler ran for a duplicate")
	}
	r.books.item.State = container.OutboxPending
	j := r.job(container.OpStart)
	if err := h(ctx, j); err != nil || calls != 1 || j.mark() != "ob-1" {
		t.Errorf("pending item: %v, %d calls, mark %q", err, calls, j.mark())
	}
	r.books.err = errors.New("throttled")
	var rt errRetry
	if err := h(ctx, r.job(container.OpStart)); !errors.As(err, &rt) || calls != 1 {
		t.Errorf("failed read: %v; want it marked for a retry", err)
	}
}

func TestFinishMarksDoneAndStale(t *testing.T) {
	r := newMWRig(t)
	ctx := context.Background()
	var calls int
	if err := r.w.finish(stub(nil, &calls))(ctx, r.job(container.OpStop)); err != nil || !r.books.called("done") {
		t.Errorf("done: %v, calls %v", err, r.books.calls)
	}
	r.books.calls = nil
	res := resultFor(t, r.w.finish(stub(stale("moved on"), &calls))(ctx, r.job(container.OpStop)))
	if !res.Ack || res.Reason != "stale: moved on" || !r.books.called("done") {
		t.Errorf("stale: %+v, calls %v", res, r.books.calls)
	}
	r.books.calls = nil
	boom := errors.New("boom")
	if err := r.w.finish(stub(boom, &calls))(ctx, r.job(container.OpStop)); !errors.Is(err, boom) || len(r.books.calls) != 0 {
		t.Errorf("failure: %v, calls %v; want it passed on, nothing marked", err, r.books.calls)
	}
}

func TestWaitingResendsWaits(t *testing.T) {
	r := newMWRig(t)
	ctx := context.Background()
	var calls int
	unavailable := errors.Join(runtime.ErrUnavailable, errors.New("engine down"))
	res := resultFor(t, r.w.waiting(stub(unavailable, &calls))(ctx, r.job(container.OpStart)))
	if res.Ack || res.Requeue == nil || res.Requeue.ID != "ob-1-u1" || !r.books.called("attempt") {
		t.Errorf("unavailable: %+v", res)
	}
	res = resultFor(t, r.w.waiting(stub(errReceiver{errors.New("503")}, &calls))(ctx, r.job(container.OpDeliver)))
	if res.Requeue == nil || res.Requeue.ID != "ob-1-r1" || res.Reason != "retry: 503" {
		t.Errorf("receiver: %+v", res)
	}
	j := r.job(container.OpStart)
	j.Msg.Unavailable = &outbox.Unavailable{Since: time.Now().Add(-2 * time.Hour), Retries: 5}
	if res := resultFor(t, r.w.waiting(stub(unavailable, &calls))(ctx, j)); !res.Ack || !strings.HasPrefix(res.Reason, "failed: runtime unavailable") ||
		len(r.m.failed) != 1 {
		t.Errorf("unavailable past the limit: %+v, failed %v", res, r.m.failed)
	}
	boom := errors.New("boom")
	if err := r.w.waiting(stub(boom, &calls))(ctx, r.job(container.OpStart)); !errors.Is(err, boom) {
		t.Errorf("other failure: %v; want it passed on", err)
	}
}

func TestRetryingRetriesWhatMayMend(t *testing.T) {
	r := newMWRig(t)
	ctx := context.Background()
	var calls int
	res := resultFor(t, r.w.retrying(stub(errors.New("flaky"), &calls))(ctx, r.job(container.OpStop)))
	if res.Ack || res.Delay != time.Second || res.Reason != "retry: flaky" || !r.books.called("attempt") {
		t.Errorf("retryable: %+v", res)
	}
	if res := resultFor(t, r.w.retrying(stub(retryable(runtime.ErrInvalid), &calls))(ctx, r.job(container.OpStop))); res.Ack {
		t.Errorf("marked for a retry: %+v", res)
	}
	last := r.job(container.OpStop)
	last.Attempt = 3
	if res := resultFor(t, r.w.retrying(stub(errors.New("flaky"), &calls))(ctx, last)); res.Ack || res.Delay != 0 ||
		!strings.HasPrefix(res.Reason, "dead-letter: ") || !r.books.called("failed") {
		t.Errorf("last attempt: %+v", res)
	}
	for _, err := range []error{wrapped(errPermanent), runtime.ErrInvalid, nil, Settle(ack("x"))} {
		if got := r.w.retrying(stub(err, &calls))(ctx, r.job(container.OpStop)); !errors.Is(got, err) {
			t.Errorf("%v: %v; want it passed on", err, got)
		}
	}
}

// wrapped is err under another error, as a handler returns it.
func wrapped(err error) error { return errors.Join(errors.New("exited at once"), err) }

func TestFailingSettlesTheRest(t *testing.T) {
	r := newMWRig(t)
	ctx := context.Background()
	var calls int
	res := resultFor(t, r.w.failing(stub(runtime.ErrInvalid, &calls))(ctx, r.job(container.OpCreate)))
	if !res.Ack || !strings.HasPrefix(res.Reason, "failed: ") || !r.books.called("failed") || len(r.m.failed) != 1 {
		t.Errorf("failure: %+v, books %v, failed %v", res, r.books.calls, r.m.failed)
	}
	for _, err := range []error{nil, Settle(ack("x"))} {
		if got := r.w.failing(stub(err, &calls))(ctx, r.job(container.OpCreate)); !errors.Is(got, err) {
			t.Errorf("%v: %v; want it passed on", err, got)
		}
	}
}

func TestChainOrderAndResult(t *testing.T) {
	var order []string
	layer := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, j *Job) error { order = append(order, name); return next(ctx, j) }
		}
	}
	h := chain(func(context.Context, *Job) error { order = append(order, "handler"); return nil }, layer("outer"), nil, layer("inner"))
	if res := resultOf(h(context.Background(), &Job{})); !res.Ack || res.Reason != "done" {
		t.Errorf("done: %+v", res)
	}
	if strings.Join(order, ",") != "outer,inner,handler" {
		t.Errorf("order %v", order)
	}
	if res := resultOf(errors.New("loose")); res.Ack {
		t.Errorf("an unsettled error was acknowledged: %+v", res)
	}
}
