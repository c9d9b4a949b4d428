package main

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// handedStore is the store as berth serve's reconciler reads it: an item
// the dispatcher handed to an in-process queue counts as dispatched (the
// handover's memory), as it did when the dispatcher wrote the mark, so
// that the stuck policy re-enqueues an instance whose message went
// nowhere instead of leaving it to a sweep that will not send it again.
type handedStore struct {
	*boltstore.Store
	handover *outbox.Handover
}

var _ reconcile.Store = handedStore{}

// ListUndispatched lists what the dispatcher has not handed over.
func (s handedStore) ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error) {
	return s.handover.ListUndispatched(ctx, createdBefore, limit)
}
