package outbox

import (
	"sync"
	"time"
)

// heldItems are the items a Watcher with MarkAfter has sent but not yet
// marked dispatched, with when each was sent. A nil *heldItems holds
// nothing (the Dispatcher's own passes mark at once).
type heldItems struct {
	now func() time.Time

	mu   sync.Mutex
	sent map[string]time.Time
}

func newHeldItems(now func() time.Time) *heldItems {
	return &heldItems{now: now, sent: map[string]time.Time{}}
}

func (h *heldItems) has(id string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.sent[id]
	return ok
}

func (h *heldItems) add(ids []string) {
	if h == nil || len(ids) == 0 {
		return
	}
	at := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		h.sent[id] = at
	}
}

// due removes and returns the items sent at least age ago.
func (h *heldItems) due(age time.Duration) []string {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id, at := range h.sent {
		if !at.Add(age).After(now) {
			ids = append(ids, id)
			delete(h.sent, id)
		}
	}
	return ids
}

// oldest is when the earliest held item was sent; false when none is held.
func (h *heldItems) oldest() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first time.Time
	for _, at := range h.sent {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}
