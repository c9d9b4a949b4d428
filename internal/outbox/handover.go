package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// Handover is the local server's memory of the outbox items its
// dispatcher handed to the in-process queues. It stands between the
// Dispatcher and the store (Dispatcher.Store): MarkDispatched records the
// hand-over in memory instead of writing it, and ListUndispatched leaves
// out what was handed over, so that a pass does not send an item again.
// The durable dispatch mark is the worker's claim's
// (store.TransitionParams.DispatchOutboxID), one commit fewer per create.
// Only the operations a worker claims (create, start, stop, delete) are
// remembered: the others (webhook deliveries, group policies) are marked
// in the store as before, since no claim would mark them and a listing
// must not read them again and again while they wait for their retries.
// An operation whose instance moved on stays pending in the store until
// its worker finishes it.
//
// Nothing is lost in a crash: the memory goes with the in-process queues,
// and every item still pending in the store, handed over or not, is
// listed by the first pass of the next start and sent again (at least
// once, as before; the worker drops a duplicate).
//
// An item leaves the memory when a complete listing no longer shows it
// (it was finished, or a claim marked it), and at once when a redelivery
// makes it pending again under its id (Committed), so that it is sent
// again. A Handover is safe for concurrent use.
type Handover struct {
	store.OutboxStore

	mu sync.Mutex
	// gen counts listings; an entry remembers the last one that saw it
	// or the hand-over, so that a listing only forgets what it could
	// have seen.
	gen   uint64
	items map[string]handed
}

// handed is what the memory knows of one pending item.
type handed struct {
	gen       uint64
	createdAt time.Time
	// claimed: an operation whose worker's claim writes the mark.
	claimed bool
	// sent: handed over to a queue (MarkDispatched), not only listed.
	sent bool
}

var _ store.OutboxStore = (*Handover)(nil)

// NewHandover returns a Handover in front of st.
func NewHandover(st store.OutboxStore) *Handover {
	return &Handover{OutboxStore: st, items: map[string]handed{}}
}

// MarkDispatched records in memory that a listed operation a worker
// claims was handed over: it writes nothing, the claim carries the
// durable mark. Any other listed item is marked in the store. An item
// this Handover did not list (or has forgotten since: a redelivery) is
// left as it is: still pending, the next pass may send it again, which
// the worker drops as a duplicate; a late mark never hides a redelivery.
func (h *Handover) MarkDispatched(ctx context.Context, id string, at time.Time) error {
	h.mu.Lock()
	e, ok := h.items[id]
	if ok && e.claimed {
		e.sent, e.gen = true, h.gen
		h.items[id] = e
	}
	h.mu.Unlock()
	if ok && !e.claimed {
		return h.OutboxStore.MarkDispatched(ctx, id, at)
	}
	return nil
}

// claimedOps are the operations whose worker claims the instance
// (manager.ClaimItem), and so writes the dispatch mark.
var claimedOps = map[container.Op]bool{
	container.OpCreate: true, container.OpStart: true, container.OpStop: true, container.OpDelete: true,
}

// ListUndispatched is the store's listing without the items handed over.
// A limit of zero or less means 100, as the stores have it.
func (h *Handover) ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error) {
	if limit <= 0 {
		limit = 100
	}
	h.mu.Lock()
	h.gen++
	gen := h.gen
	want := limit
	for _, e := range h.items {
		if e.sent {
			want++
		}
	}
	h.mu.Unlock()
	items, err := h.OutboxStore.ListUndispatched(ctx, createdBefore, want)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	listed := make(map[string]bool, len(items))
	out := make([]container.OutboxItem, 0, min(len(items), limit))
	for _, it := range items {
		listed[it.ID] = true
		e, ok := h.items[it.ID]
		if ok && e.sent {
			continue
		}
		if len(out) < limit {
			out = append(out, it)
			h.items[it.ID] = handed{gen: h.gen, createdAt: it.CreatedAt, claimed: claimedOps[it.Op]}
		}
	}
	if len(items) < want {
		// The store listed every pending item created before createdBefore:
		// one it did not list, remembered before this listing began, is
		// pending no more.
		for id, e := range h.items {
			if e.gen < gen && !listed[id] && e.createdAt.Before(createdBefore) {
				delete(h.items, id)
			}
		}
	}
	return out, nil
}

// Committed is a store.Hooked callback: a redelivery (store.Commit.Redelivered)
// made a finished item pending again under its id, so it is forgotten and
// the next pass sends it. Call it before the Watcher's Committed.
func (h *Handover) Committed(c store.Commit) {
	if c.Redelivered == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.items, c.Redelivered)
}

// remembered is how many items the memory holds (for tests).
func (h *Handover) remembered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.items)
}
