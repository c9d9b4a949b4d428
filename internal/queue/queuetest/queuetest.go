// Package queuetest is the conformance suite of queue.Queue. Each backend
// declares the guarantees it offers in a Features value (in the manner of
// watermill's pub/sub test features) and Run runs the tests that check them,
// each on fresh queues made by the backend's factory, in parallel.
//
// The suite keeps its timeouts short (visibility 1–2 s where it tests
// redelivery, 10 s where a redelivery would spoil the test) and waits on
// Receive's own blocking and on deadlines, not on fixed sleeps. Timing
// assertions are one-sided with a slack (Slack) for the distance between a
// server's clock and the test's: "not before delay − slack".
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/testenv"
)

// Options configure the queues one test asks the factory for.
type Options struct {
	// VisibilityTimeout of the work queue.
	VisibilityTimeout time.Duration
	// MaxReceives: deliveries without an ack before the message moves to
	// the dead-letter queue.
	MaxReceives int
}

// NewQueue makes a fresh, empty work queue with its dead-letter queue. Names
// must be unique per call; the factory registers its own cleanup.
type NewQueue func(t *testing.T, opts Options) (q, dlq queue.Queue)

// Ordering is the order a backend promises.
type Ordering int

// Orderings.
const (
	// OrderingNone: no order is promised (SQS standard queues, memqueue).
	OrderingNone Ordering = iota
	// OrderingFIFO: messages are delivered in send order (not offered by
	// any backend today; the suite has no test for it yet).
	OrderingFIFO
)

func (o Ordering) String() string {
	if o == OrderingFIFO {
		return "fifo"
	}
	return "none"
}

// Features are the guarantees a backend declares; Run tests each declared
// one and skips (naming it) each that is not.
type Features struct {
	// AtLeastOnce: a sent message is delivered until acked, and an acked
	// one never again. Every queue.Queue must declare it.
	AtLeastOnce bool
	// RedeliveryAfterVisibilityTimeout: an unacked message is delivered
	// again once its visibility timeout passes, with ReceiveCount + 1, and
	// not before.
	RedeliveryAfterVisibilityTimeout bool
	// DelayOnRetry: Nack(delay) redelivers after ≥ delay and not before;
	// Nack(0) at once.
	DelayOnRetry bool
	// DelayedSend: Outgoing.Delay keeps a new message invisible that long.
	DelayedSend bool
	// DeadLetter: after MaxReceives deliveries without an ack the message
	// moves to the dead-letter queue, with its body and attributes.
	DeadLetter bool
	// MessageAttributes: string attributes round-trip (empty values are
	// dropped by every backend, as SQS refuses them).
	MessageAttributes bool
	// Ordering promised.
	Ordering Ordering
	// Capacity, if positive, is the number of messages the factory's
	// queues hold before Send fails the extra entries (a bounded queue).
	Capacity int
	// Persistent: messages survive a restart of the process holding them.
	// Declared for the record; the suite cannot test it.
	Persistent bool
	// TimeGranularity: delays and visibility timeouts are rounded up to a
	// multiple of it (SQS: a second). Zero means exact.
	TimeGranularity time.Duration
}

// Slack is the tolerance of the "not before" timing checks.
const Slack = 250 * time.Millisecond

// Run runs the suite against a backend.
func Run(t *testing.T, f Features, newQueue NewQueue) {
	t.Helper()
	if !f.AtLeastOnce {
		t.Fatal("queuetest: every queue.Queue must declare AtLeastOnce")
	}
	s := &suite{f: f, newQueue: newQueue}
	tests := []struct {
		name string
		need bool
		what string
		fn   func(t *testing.T)
	}{
		{"SendReceiveAck", true, "", s.sendReceiveAck},
		{"EmptyReceiveWaits", true, "", s.emptyReceiveWaits},
		{"ReceiveWakesOnSend", true, "", s.receiveWakesOnSend},
		{"ReceiveHonoursContext", true, "", s.receiveHonoursContext},
		{"BatchOfTen", true, "", s.batchOfTen},
		{"BatchLimits", true, "", s.batchLimits},
		{"ConcurrentConsumers", true, "", s.concurrentConsumers},
		{"RedeliveryAfterVisibilityTimeout", f.RedeliveryAfterVisibilityTimeout, "redelivery after the visibility timeout", s.redelivery},
		{"NackDelay", f.DelayOnRetry, "delay on retry", s.nackDelay},
		{"DelayedSend", f.DelayedSend, "delayed send", s.delayedSend},
		{"DeadLetter", f.DeadLetter, "dead-lettering", s.deadLetter},
		{"MessageAttributes", f.MessageAttributes, "message attributes", s.attributes},
		{"Capacity", f.Capacity > 0, "a capacity", s.capacity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.need {
				t.Skipf("the backend does not declare %s", tc.what)
			}
			t.Parallel()
			tc.fn(t)
		})
	}
}

type suite struct {
	f        Features
	newQueue NewQueue
}

// round is d rounded up to the backend's granularity.
func (s *suite) round(d time.Duration) time.Duration {
	g := s.f.TimeGranularity
	if g <= 0 {
		return d
	}
	return (d + g - 1) / g * g
}

func send(t *testing.T, q queue.Queue, msgs ...queue.Outgoing) {
	t.Helper()
	if err := q.Send(testenv.Context(t, 10*time.Second), msgs); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

func msg(id, body string) queue.Outgoing { return queue.Outgoing{ID: id, Body: []byte(body)} }

// receiveOne waits up to wait for exactly one message.
func receiveOne(t *testing.T, q queue.Queue, wait time.Duration) (queue.Delivery, bool) {
	t.Helper()
	ds, err := q.Receive(testenv.Context(t, wait+30*time.Second), 1, wait)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	switch len(ds) {
	case 0:
		return queue.Delivery{}, false
	case 1:
		return ds[0], true
	}
	t.Fatalf("Receive(max 1) returned %d messages", len(ds))
	return queue.Delivery{}, false
}

func mustReceiveOne(t *testing.T, q queue.Queue, wait time.Duration) queue.Delivery {
	t.Helper()
	d, ok := receiveOne(t, q, wait)
	if !ok {
		t.Fatalf("no message within %s", wait)
	}
	return d
}

func expectNone(t *testing.T, q queue.Queue, wait time.Duration, why string) {
	t.Helper()
	if d, ok := receiveOne(t, q, wait); ok {
		t.Fatalf("%s: got message %s (body %q, receive count %d)", why, d.MessageID, d.Body, d.ReceiveCount)
	}
}

func ack(t *testing.T, q queue.Queue, d queue.Delivery) {
	t.Helper()
	if err := q.Ack(testenv.Context(t, 10*time.Second), d); err != nil {
		t.Fatalf("Ack %s: %v", d.MessageID, err)
	}
}

func (s *suite) sendReceiveAck(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: time.Second, MaxReceives: 5})
	before := time.Now()
	send(t, q, msg("a", "hello, queue"))
	d := mustReceiveOne(t, q, 5*time.Second)
	if string(d.Body) != "hello, queue" {
		t.Errorf("body %q, want %q", d.Body, "hello, queue")
	}
	if d.ReceiveCount != 1 {
		t.Errorf("ReceiveCount %d on the first delivery, want 1", d.ReceiveCount)
	}
	if d.MessageID == "" || d.Handle == "" {
		t.Errorf("MessageID %q, Handle %q: both must be set", d.MessageID, d.Handle)
	}
	if d.SentAt.Before(before.Add(-2*time.Second)) || d.SentAt.After(time.Now().Add(2*time.Second)) {
		t.Errorf("SentAt %s, want about %s", d.SentAt.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano))
	}
	ack(t, q, d)
	// Acked for good: not back after its visibility timeout.
	expectNone(t, q, s.round(time.Second)+time.Second, "an acked message came back")
}

func (s *suite) emptyReceiveWaits(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: time.Second, MaxReceives: 5})
	start := time.Now()
	ds, err := q.Receive(testenv.Context(t, 30*time.Second), 10, time.Second)
	took := time.Since(start)
	if err != nil || len(ds) != 0 {
		t.Fatalf("Receive on an empty queue: %d messages, %v", len(ds), err)
	}
	if took < time.Second-Slack {
		t.Errorf("Receive(wait 1s) on an empty queue returned after %s", took)
	}
	if limit := s.round(time.Second) + 3*time.Second; took > limit {
		t.Errorf("Receive(wait 1s) on an empty queue took %s (more than %s)", took, limit)
	}
	// wait 0 answers at once.
	start = time.Now()
	if _, err := q.Receive(testenv.Context(t, 30*time.Second), 1, 0); err != nil {
		t.Fatalf("Receive(wait 0): %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Receive(wait 0) took %s", took)
	}
}

func (s *suite) receiveWakesOnSend(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 5})
	type result struct {
		ds  []queue.Delivery
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		ds, err := q.Receive(context.Background(), 1, 15*time.Second)
		got <- result{ds, err, time.Now()}
	}()
	// Give the receiver time to start waiting: this sleep only makes the
	// test meaningful (a send before the wait would pass it as well).
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	send(t, q, msg("a", "wake up"))
	select {
	case r := <-got:
		if r.err != nil || len(r.ds) != 1 {
			t.Fatalf("waiting Receive: %d messages, %v", len(r.ds), r.err)
		}
		if lag := r.at.Sub(sent); lag > 3*time.Second {
			t.Errorf("a waiting Receive returned %s after the send", lag)
		}
		ack(t, q, r.ds[0])
	case <-time.After(20 * time.Second):
		t.Fatal("a waiting Receive did not return")
	}
}

func (s *suite) receiveHonoursContext(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: time.Second, MaxReceives: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	ds, err := q.Receive(ctx, 1, 15*time.Second)
	took := time.Since(start)
	if len(ds) != 0 {
		t.Fatalf("Receive on an empty queue returned %d messages", len(ds))
	}
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Receive after its context ended: error %v, want context.DeadlineExceeded", err)
	}
	if took > 3*time.Second {
		t.Errorf("Receive returned %s after its context ended (after 300ms)", took)
	}
}

func (s *suite) batchOfTen(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 5})
	var out []queue.Outgoing
	want := map[string]bool{}
	for i := range queue.MaxBatch {
		body := fmt.Sprintf("message %d", i)
		out = append(out, msg(fmt.Sprintf("m%d", i), body))
		want[body] = true
	}
	send(t, q, out...)
	got := map[string]queue.Delivery{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		ds, err := q.Receive(testenv.Context(t, 30*time.Second), queue.MaxBatch, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		for _, d := range ds {
			if _, dup := got[string(d.Body)]; dup {
				t.Fatalf("message %q delivered twice within its visibility timeout", d.Body)
			}
			if d.ReceiveCount != 1 {
				t.Errorf("message %q: ReceiveCount %d, want 1", d.Body, d.ReceiveCount)
			}
			got[string(d.Body)] = d
		}
	}
	for body := range want {
		if _, ok := got[body]; !ok {
			t.Fatalf("received %v, want the 10 bodies sent", slices.Sorted(maps.Keys(got)))
		}
	}
	for _, d := range got {
		ack(t, q, d)
	}
}

func (s *suite) batchLimits(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: time.Second, MaxReceives: 5})
	ctx := testenv.Context(t, 30*time.Second)
	var eleven []queue.Outgoing
	for i := range queue.MaxBatch + 1 {
		eleven = append(eleven, msg(fmt.Sprintf("m%d", i), "x"))
	}
	err := q.Send(ctx, eleven)
	var be *queue.BatchError
	if err == nil || errors.As(err, &be) {
		t.Errorf("Send of 11 messages: %v, want an error for the whole call (not a BatchError)", err)
	}
	err = q.Send(ctx, []queue.Outgoing{msg("same", "1"), msg("same", "2")})
	if err == nil || errors.As(err, &be) {
		t.Errorf("Send with a repeated entry ID: %v, want an error for the whole call", err)
	}
	if err := q.Send(ctx, nil); err != nil {
		t.Errorf("Send of no messages: %v", err)
	}
	if _, err := q.Receive(ctx, 0, 0); err == nil {
		t.Error("Receive(max 0) did not fail")
	}
	if _, err := q.Receive(ctx, queue.MaxBatch+1, 0); err == nil {
		t.Error("Receive(max 11) did not fail")
	}
	expectNone(t, q, 500*time.Millisecond, "a refused batch was partly sent")
}

// concurrentConsumers checks that a message is never handed to two
// receivers while it is invisible: several consumers drain a queue with a
// long visibility timeout and no message may be seen twice within it.
func (s *suite) concurrentConsumers(t *testing.T) {
	const vis = 10 * time.Second
	const n, consumers = 30, 4
	q, _ := s.newQueue(t, Options{VisibilityTimeout: vis, MaxReceives: 5})
	for b := 0; b < n; b += queue.MaxBatch {
		var out []queue.Outgoing
		for i := b; i < b+queue.MaxBatch; i++ {
			out = append(out, msg(fmt.Sprintf("m%d", i), fmt.Sprintf("message %d", i)))
		}
		send(t, q, out...)
	}
	type seen struct {
		at       time.Time
		consumer int
	}
	var (
		mu    sync.Mutex
		first = map[string]seen{}
		dels  []queue.Delivery
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(vis - 2*time.Second)
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				mu.Lock()
				done := len(first) >= n
				mu.Unlock()
				if done {
					return
				}
				ds, err := q.Receive(context.Background(), 3, 500*time.Millisecond)
				if err != nil {
					t.Errorf("consumer %d: Receive: %v", c, err)
					return
				}
				now := time.Now()
				mu.Lock()
				for _, d := range ds {
					if prev, dup := first[d.MessageID]; dup && now.Sub(prev.at) < vis-Slack {
						t.Errorf("message %q went to consumer %d and, %s later while still invisible, to consumer %d",
							d.Body, prev.consumer, now.Sub(prev.at), c)
						continue
					}
					first[d.MessageID] = seen{now, c}
					dels = append(dels, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(first) != n {
		t.Fatalf("the consumers received %d distinct messages, want %d", len(first), n)
	}
	for _, d := range dels {
		ack(t, q, d)
	}
	expectNone(t, q, 200*time.Millisecond, "a message was left after every one was acked")
}

func (s *suite) redelivery(t *testing.T) {
	const vis = time.Second
	q, _ := s.newQueue(t, Options{VisibilityTimeout: vis, MaxReceives: 5})
	send(t, q, msg("a", "not acked"))
	d1 := mustReceiveOne(t, q, 5*time.Second)
	received := time.Now()
	expectNone(t, q, 0, "an unacked message was delivered again at once")
	d2 := mustReceiveOne(t, q, s.round(vis)+5*time.Second)
	if after := time.Since(received); after < s.round(vis)-Slack {
		t.Errorf("redelivered %s after the first receive, before the %s visibility timeout", after, vis)
	}
	if d2.MessageID != d1.MessageID || string(d2.Body) != "not acked" {
		t.Errorf("redelivered message %s %q, want %s %q", d2.MessageID, d2.Body, d1.MessageID, "not acked")
	}
	if d2.ReceiveCount != d1.ReceiveCount+1 {
		t.Errorf("ReceiveCount %d on redelivery, want %d", d2.ReceiveCount, d1.ReceiveCount+1)
	}
	if d2.Handle == d1.Handle {
		t.Error("a redelivery has the same receipt handle as the first delivery")
	}
	if !d2.SentAt.Equal(d1.SentAt) {
		t.Errorf("SentAt changed on redelivery: %s, then %s", d1.SentAt, d2.SentAt)
	}
	ack(t, q, d2)
	expectNone(t, q, s.round(vis)+time.Second, "the message came back after its ack")
}

func (s *suite) nackDelay(t *testing.T) {
	// A long visibility timeout: any redelivery in this test is the Nack's.
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 10})
	send(t, q, msg("a", "retry me"))
	d1 := mustReceiveOne(t, q, 5*time.Second)
	const delay = time.Second
	if err := q.Nack(testenv.Context(t, 10*time.Second), d1, delay); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	nacked := time.Now()
	expectNone(t, q, 0, "a message nacked with a delay came back at once")
	d2 := mustReceiveOne(t, q, s.round(delay)+5*time.Second)
	if after := time.Since(nacked); after < s.round(delay)-Slack {
		t.Errorf("redelivered %s after Nack(%s)", after, delay)
	}
	if d2.MessageID != d1.MessageID || d2.ReceiveCount != 2 {
		t.Errorf("redelivered %s with ReceiveCount %d, want %s with 2", d2.MessageID, d2.ReceiveCount, d1.MessageID)
	}
	// Nack(0): visible again at once.
	if err := q.Nack(testenv.Context(t, 10*time.Second), d2, 0); err != nil {
		t.Fatalf("Nack(0): %v", err)
	}
	start := time.Now()
	d3 := mustReceiveOne(t, q, 5*time.Second)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("redelivered %s after Nack(0)", took)
	}
	if d3.ReceiveCount != 3 {
		t.Errorf("ReceiveCount %d on the third delivery", d3.ReceiveCount)
	}
	ack(t, q, d3)
}

func (s *suite) delayedSend(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 5})
	const delay = time.Second
	sent := time.Now()
	send(t, q, queue.Outgoing{ID: "a", Body: []byte("later"), Delay: delay}, msg("b", "now"))
	d := mustReceiveOne(t, q, 5*time.Second)
	if string(d.Body) != "now" {
		t.Fatalf("first message %q, want the undelayed one", d.Body)
	}
	ack(t, q, d)
	d = mustReceiveOne(t, q, s.round(delay)+5*time.Second)
	if after := time.Since(sent); after < s.round(delay)-Slack {
		t.Errorf("a message sent with delay %s arrived after %s", delay, after)
	}
	if string(d.Body) != "later" {
		t.Errorf("body %q, want %q", d.Body, "later")
	}
	ack(t, q, d)
}

func (s *suite) deadLetter(t *testing.T) {
	const maxReceives = 2
	q, dlq := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: maxReceives})
	if dlq == nil {
		t.Fatal("the factory returned no dead-letter queue")
	}
	attrs := map[string]string{"op": "create", "instance_id": "i-1"}
	send(t, q, queue.Outgoing{ID: "a", Body: []byte("doomed"), Attributes: attrs})
	var id string
	for i := 1; i <= maxReceives; i++ {
		d := mustReceiveOne(t, q, 5*time.Second)
		if d.ReceiveCount != i {
			t.Errorf("delivery %d: ReceiveCount %d", i, d.ReceiveCount)
		}
		id = d.MessageID
		if err := q.Nack(testenv.Context(t, 10*time.Second), d, 0); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	expectNone(t, q, time.Second, fmt.Sprintf("delivered after %d receives (MaxReceives)", maxReceives))
	d := mustReceiveOne(t, dlq, 5*time.Second)
	if string(d.Body) != "doomed" || !maps.Equal(d.Attributes, attrs) {
		t.Errorf("dead letter %q %v, want %q %v", d.Body, d.Attributes, "doomed", attrs)
	}
	if d.MessageID != id {
		t.Logf("the dead letter has message id %s, the original %s", d.MessageID, id)
	}
	ack(t, dlq, d)
	expectNone(t, q, 0, "the dead-lettered message is still on the work queue")
}

func (s *suite) attributes(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 5})
	attrs := map[string]string{
		"op":                "create",
		"instance_id":       "01JB8Z4Q6T7V9XWA2C3D4E5F6G",
		"request_id":        "req-42",
		"unicode":           "größe ✓ 容器",
		"spaces":            "  a b  ",
		"json":              `{"k":[1,2],"s":"\"q\""}`,
		"Mixed-Case.Name_1": "v",
	}
	withEmpty := maps.Clone(attrs)
	withEmpty["empty"] = ""
	send(t, q, queue.Outgoing{ID: "a", Body: []byte("with"), Attributes: withEmpty}, msg("b", "without"))
	got := map[string]queue.Delivery{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		ds, err := q.Receive(testenv.Context(t, 30*time.Second), 10, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		for _, d := range ds {
			got[string(d.Body)] = d
		}
	}
	if len(got) != 2 {
		t.Fatalf("received %d of 2 messages", len(got))
	}
	if a := got["with"].Attributes; !maps.Equal(a, attrs) {
		t.Errorf("attributes %q, want %q (the empty one dropped)", a, attrs)
	}
	if a := got["without"].Attributes; len(a) != 0 {
		t.Errorf("a message sent without attributes has %q", a)
	}
	for _, d := range got {
		ack(t, q, d)
	}
}

func (s *suite) capacity(t *testing.T) {
	q, _ := s.newQueue(t, Options{VisibilityTimeout: 10 * time.Second, MaxReceives: 5})
	ctx := testenv.Context(t, 30*time.Second)
	n := 0
	for n < s.f.Capacity {
		var out []queue.Outgoing
		for i := 0; i < queue.MaxBatch && n+i < s.f.Capacity; i++ {
			out = append(out, msg(fmt.Sprintf("m%d", n+i), "fill"))
		}
		send(t, q, out...)
		n += len(out)
	}
	err := q.Send(ctx, []queue.Outgoing{msg("x", "over"), msg("y", "over")})
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 2 || be.Failed["x"] == nil || be.Failed["y"] == nil {
		t.Fatalf("Send beyond the capacity: %v, want a BatchError failing x and y", err)
	}
	// Taking one out makes room for one.
	d := mustReceiveOne(t, q, 5*time.Second)
	ack(t, q, d)
	err = q.Send(ctx, []queue.Outgoing{msg("x", "fits"), msg("y", "over")})
	if !errors.As(err, &be) || len(be.Failed) != 1 || be.Failed["y"] == nil {
		t.Fatalf("Send of two with room for one: %v, want a BatchError failing only y", err)
	}
}
