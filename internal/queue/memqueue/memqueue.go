// Package memqueue is the in-process queue.Queue of the local server: bounded,
// with a visibility timeout, delayed redelivery on Nack, receive counts and a
// dead-letter queue after MaxReceives, and a Receive that blocks until a
// message becomes visible (woken by the send, or by the timer that ends a
// visibility timeout or delay: there is no polling).
//
// Messages live in memory only: a restart loses them. The local server does
// not depend on that: every message comes from an outbox item in the store,
// and the sweep re-dispatches items that were never acknowledged as
// dispatched, while dispatched-but-lost work is recovered by the reconciler.
package memqueue

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/queue"
)

// Errors of the in-process queue.
var (
	// ErrFull is the error of each entry of a Send that found the queue at
	// its capacity (reported in a *queue.BatchError).
	ErrFull = errors.New("memqueue: queue is full")
	// ErrClosed is returned by every method once Close was called.
	ErrClosed = errors.New("memqueue: queue is closed")
	// ErrInvalidHandle is returned by Ack and Nack for a handle that is not
	// the message's latest receipt (the message was received again since,
	// or it is gone), and by Nack for a message that is no longer in flight.
	ErrInvalidHandle = errors.New("memqueue: receipt handle is not current")
)

// Defaults of Options.
const (
	DefaultCapacity          = 10000
	DefaultVisibilityTimeout = 30 * time.Second
)

// Options configure a Queue. The zero value is usable: capacity
// DefaultCapacity, visibility DefaultVisibilityTimeout, no dead-lettering.
type Options struct {
	// Name appears in errors and Stats.
	Name string
	// Capacity bounds the messages held (visible, in flight and delayed).
	// Entries of a Send beyond it fail with ErrFull. Zero means
	// DefaultCapacity.
	Capacity int
	// VisibilityTimeout is how long a received message stays invisible
	// unless it is acked or nacked. Zero means DefaultVisibilityTimeout.
	VisibilityTimeout time.Duration
	// MaxReceives, if positive, is how many times a message is delivered
	// without an ack: when it would become visible after its MaxReceives-th
	// delivery it moves to DeadLetter instead (SQS's maxReceiveCount).
	MaxReceives int
	// DeadLetter receives the messages given up after MaxReceives. It
	// takes them even beyond its capacity: nothing is dropped. If nil while
	// MaxReceives is set, New makes one (see DeadLetter()).
	DeadLetter *Queue
	// FairBy, when set, names a message attribute (outbox.AttrOwner)
	// whose values share the receivers: a receive takes the oldest ready
	// message of the value with the fewest messages outstanding (ready or
	// in flight), the least recently served among equals (round-robin), so
	// one value's many messages do not delay another's few by all of them.
	// Empty: in order, oldest first.
	FairBy string
}

// Stats is a snapshot of a queue's contents.
type Stats struct {
	Visible  int // ready to be received
	InFlight int // received, neither acked nor nacked, visibility not over
	Delayed  int // sent with a delay or nacked with one, not yet visible
}

// Total is the number of messages held.
func (s Stats) Total() int { return s.Visible + s.InFlight + s.Delayed }

type message struct {
	id           string
	body         []byte
	attrs        map[string]string
	sentAt       time.Time
	receiveCount int
	// receipt counts the deliveries; the handle of the latest is id#receipt.
	receipt  int
	inFlight bool
	// visibleAt is when an invisible message becomes visible; index is its
	// place in the invisible heap (-1 when it is not there).
	visibleAt time.Time
	index     int
}

// Queue is an in-process queue.Queue. It is safe for concurrent use.
type Queue struct {
	name        string
	capacity    int
	visibility  time.Duration
	maxReceives int
	dlq         *Queue
	fairBy      string

	mu        sync.Mutex
	closed    bool
	msgs      map[string]*message // every message held, by id
	ready     []*message          // visible, oldest first
	invisible invisibleHeap       // in flight or delayed, earliest visibleAt first
	// served is when (in takes, turns) each FairBy value was last served.
	served  map[string]uint64
	turns   uint64
	timer   *time.Timer // fires at invisible[0].visibleAt
	timerAt time.Time
	// wake is closed (and replaced) whenever messages become visible or the
	// queue closes, waking every waiting Receive.
	wake chan struct{}
}

var _ queue.Queue = (*Queue)(nil)

// New returns an empty queue.
func New(opts Options) *Queue {
	q := &Queue{
		name:        opts.Name,
		capacity:    opts.Capacity,
		visibility:  opts.VisibilityTimeout,
		maxReceives: opts.MaxReceives,
		dlq:         opts.DeadLetter,
		fairBy:      opts.FairBy,
		served:      map[string]uint64{},
		msgs:        map[string]*message{},
		wake:        make(chan struct{}),
	}
	if q.name == "" {
		q.name = "memqueue"
	}
	if q.capacity <= 0 {
		q.capacity = DefaultCapacity
	}
	if q.visibility <= 0 {
		q.visibility = DefaultVisibilityTimeout
	}
	if q.maxReceives > 0 && q.dlq == nil {
		q.dlq = New(Options{Name: q.name + "-dlq", Capacity: q.capacity, VisibilityTimeout: q.visibility})
	}
	return q
}

// DeadLetter returns the queue that takes the messages given up after
// MaxReceives, or nil when the queue does not dead-letter.
func (q *Queue) DeadLetter() *Queue { return q.dlq }

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// Stats returns how many messages the queue holds, by state.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	var s Stats
	s.Visible = len(q.ready)
	for _, m := range q.invisible {
		if m.inFlight {
			s.InFlight++
		} else {
			s.Delayed++
		}
	}
	return s
}

// Close stops the queue: waiting receivers return ErrClosed at once, and
// every later call fails with ErrClosed. The messages held are dropped
// (Stats still reports them). Closing twice is harmless.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	if q.timer != nil {
		q.timer.Stop()
	}
	q.broadcastLocked()
	return nil
}

// Send adds up to queue.MaxBatch messages. Entries that do not fit in the
// capacity fail with ErrFull (in a *queue.BatchError); the others are sent.
// Attributes with empty values are dropped, as SQS refuses them.
func (q *Queue) Send(ctx context.Context, msgs []queue.Outgoing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msgs) > queue.MaxBatch {
		return fmt.Errorf("memqueue %s: batch of %d messages, at most %d", q.name, len(msgs), queue.MaxBatch)
	}
	if err := checkBatchIDs(msgs); err != nil {
		return fmt.Errorf("memqueue %s: %w", q.name, err)
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	var failed map[string]error
	woke := false
	for _, o := range msgs {
		if len(q.msgs) >= q.capacity {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[o.ID] = fmt.Errorf("%w (%s, capacity %d)", ErrFull, q.name, q.capacity)
			continue
		}
		m := &message{
			id:     newID(),
			body:   append([]byte(nil), o.Body...),
			attrs:  copyAttrs(o.Attributes),
			sentAt: now,
			index:  -1,
		}
		q.msgs[m.id] = m
		if o.Delay > 0 {
			m.visibleAt = now.Add(o.Delay)
			heap.Push(&q.invisible, m)
		} else {
			q.ready = append(q.ready, m)
			woke = true
		}
	}
	q.scheduleLocked()
	if woke {
		q.broadcastLocked()
	}
	if failed != nil {
		return &queue.BatchError{Failed: failed}
	}
	return nil
}

// Receive waits up to wait for visible messages and returns at most max of
// them (1..10), each now invisible for the visibility timeout. It returns
// as soon as at least one message is there; with none after wait, it
// returns an empty slice and no error.
func (q *Queue) Receive(ctx context.Context, max int, wait time.Duration) ([]queue.Delivery, error) {
	if max < 1 || max > queue.MaxBatch {
		return nil, fmt.Errorf("memqueue %s: receive max %d, want 1..%d", q.name, max, queue.MaxBatch)
	}
	var deadline <-chan time.Time
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		if len(q.ready) > 0 {
			out := q.takeLocked(max)
			q.mu.Unlock()
			return out, nil
		}
		wake := q.wake
		q.mu.Unlock()

		if deadline == nil {
			if wait <= 0 {
				return nil, nil
			}
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-wake:
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// takeLocked delivers up to max ready messages.
func (q *Queue) takeLocked(max int) []queue.Delivery {
	n := min(max, len(q.ready))
	now := time.Now()
	out := make([]queue.Delivery, 0, n)
	if q.fairBy != "" {
		q.fairOrderLocked(n)
	}
	for _, m := range q.ready[:n] {
		m.receiveCount++
		m.receipt++
		m.inFlight = true
		m.visibleAt = now.Add(q.visibility)
		heap.Push(&q.invisible, m)
		out = append(out, queue.Delivery{
			MessageID:    m.id,
			Body:         append([]byte(nil), m.body...),
			Attributes:   copyAttrs(m.attrs),
			ReceiveCount: m.receiveCount,
			SentAt:       m.sentAt,
			Handle:       m.id + "#" + strconv.Itoa(m.receipt),
		})
	}
	clear(q.ready[:n])
	q.ready = q.ready[n:]
	q.scheduleLocked()
	return out
}

// Ack removes a delivered message for good. A handle that is not the
// message's latest receipt fails with ErrInvalidHandle and removes nothing.
func (q *Queue) Ack(ctx context.Context, d queue.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	m, err := q.lookupLocked(d.Handle)
	if err != nil {
		return err
	}
	q.removeLocked(m)
	return nil
}

// Nack makes an in-flight message visible again after delay (at once for
// delay ≤ 0). A message past its MaxReceives-th delivery goes to the
// dead-letter queue then instead.
func (q *Queue) Nack(ctx context.Context, d queue.Delivery, delay time.Duration) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	m, err := q.lookupLocked(d.Handle)
	if err == nil && !m.inFlight {
		err = fmt.Errorf("%w: message %s is not in flight", ErrInvalidHandle, m.id)
	}
	if err != nil {
		q.mu.Unlock()
		return err
	}
	m.inFlight = false
	m.visibleAt = time.Now().Add(max(delay, 0))
	heap.Fix(&q.invisible, m.index)
	dead := q.promoteLocked(time.Now())
	q.scheduleLocked()
	q.mu.Unlock()
	q.deadLetter(dead)
	return nil
}

func (q *Queue) lookupLocked(handle string) (*message, error) {
	id, receipt, ok := strings.Cut(handle, "#")
	m := q.msgs[id]
	if !ok || m == nil || strconv.Itoa(m.receipt) != receipt {
		return nil, fmt.Errorf("%w (queue %s, handle %q)", ErrInvalidHandle, q.name, handle)
	}
	return m, nil
}

func (q *Queue) removeLocked(m *message) {
	delete(q.msgs, m.id)
	if m.index >= 0 {
		heap.Remove(&q.invisible, m.index)
		q.scheduleLocked()
		return
	}
	for i, r := range q.ready {
		if r == m {
			q.ready = append(q.ready[:i], q.ready[i+1:]...)
			return
		}
	}
}

// promoteLocked moves every invisible message whose time has come to the
// ready list, or out of the queue when it has used up its receives; it
// returns the latter for deadLetter, which must be called without q.mu.
func (q *Queue) promoteLocked(now time.Time) (dead []*message) {
	woke := false
	for len(q.invisible) > 0 && !q.invisible[0].visibleAt.After(now) {
		m := heap.Pop(&q.invisible).(*message)
		m.inFlight = false
		if q.maxReceives > 0 && m.receiveCount >= q.maxReceives {
			delete(q.msgs, m.id)
			dead = append(dead, m)
			continue
		}
		q.ready = append(q.ready, m)
		woke = true
	}
	if woke {
		q.broadcastLocked()
	}
	return dead
}

// deadLetter hands given-up messages to the dead-letter queue. It runs
// without q.mu held, so a chain of queues never holds two locks at once.
func (q *Queue) deadLetter(dead []*message) {
	if len(dead) == 0 || q.dlq == nil {
		return
	}
	q.dlq.adopt(dead)
}

// adopt takes messages dead-lettered by another queue, keeping their id,
// body, attributes, send time and receive count (as SQS does), regardless
// of capacity.
func (q *Queue) adopt(ms []*message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	for _, m := range ms {
		m.inFlight, m.index, m.receipt = false, -1, 0
		q.msgs[m.id] = m
		q.ready = append(q.ready, m)
	}
	q.broadcastLocked()
}

// scheduleLocked points the timer at the earliest invisible message.
func (q *Queue) scheduleLocked() {
	if q.closed || len(q.invisible) == 0 {
		if q.timer != nil {
			q.timer.Stop()
			q.timerAt = time.Time{}
		}
		return
	}
	at := q.invisible[0].visibleAt
	if q.timer != nil && q.timerAt.Equal(at) {
		return
	}
	q.timerAt = at
	d := time.Until(at)
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.tick)
		return
	}
	q.timer.Stop()
	q.timer.Reset(d)
}

// tick runs when the earliest invisible message is due.
func (q *Queue) tick() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.timerAt = time.Time{}
	dead := q.promoteLocked(time.Now())
	q.scheduleLocked()
	q.mu.Unlock()
	q.deadLetter(dead)
}

func (q *Queue) broadcastLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

func checkBatchIDs(msgs []queue.Outgoing) error {
	seen := make(map[string]bool, len(msgs))
	for _, o := range msgs {
		if o.ID == "" {
			return errors.New("batch entry without an ID")
		}
		if seen[o.ID] {
			return fmt.Errorf("batch entry ID %q appears twice", o.ID)
		}
		seen[o.ID] = true
	}
	return nil
}

func copyAttrs(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if v == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(in))
		}
		out[k] = v
	}
	return out
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// invisibleHeap orders invisible messages by when they become visible.
type invisibleHeap []*message

func (h invisibleHeap) Len() int           { return len(h) }
func (h invisibleHeap) Less(i, j int) bool { return h[i].visibleAt.Before(h[j].visibleAt) }
func (h invisibleHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *invisibleHeap) Push(x any) {
	m := x.(*message)
	m.index = len(*h)
	*h = append(*h, m)
}
func (h *invisibleHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	m.index = -1
	*h = old[:len(old)-1]
	return m
}

// fairOrderLocked moves to the front of ready the n messages a fair
// receive takes, one at a time: the oldest ready message of the FairBy
// value with the fewest messages outstanding (ready and in flight), and
// among those the value served least recently (a value never served
// first). So an owner with a few creates is served before one with many,
// whose backlog would otherwise make them wait a turn each (shortest
// backlog first: an owner with many waits only for the others' backlogs,
// which the per-owner pending share bounds), and owners alike take turns.
// Each pass is linear in the messages held.
func (q *Queue) fairOrderLocked(n int) {
	outstanding := map[string]int{}
	for _, m := range q.invisible {
		if m.inFlight {
			outstanding[m.attrs[q.fairBy]]++
		}
	}
	for _, m := range q.ready {
		outstanding[m.attrs[q.fairBy]]++
	}
	before := func(a, b string) bool {
		return outstanding[a] < outstanding[b] || outstanding[a] == outstanding[b] && q.served[a] < q.served[b]
	}
	for i := range n {
		best := i
		for j := i + 1; j < len(q.ready); j++ {
			if before(q.ready[j].attrs[q.fairBy], q.ready[best].attrs[q.fairBy]) {
				best = j
			}
		}
		m := q.ready[best]
		copy(q.ready[i+1:best+1], q.ready[i:best])
		q.ready[i] = m
		q.turns++
		// Taken now, it stays outstanding (in flight) for this pass.
		q.served[m.attrs[q.fairBy]] = q.turns
	}
}
