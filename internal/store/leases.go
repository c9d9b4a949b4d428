package store

import (
	"context"
	"strconv"
	"time"
)

// LeaseStore keeps leases: at most n holders of a key at once, each until
// it gives its lease back or its time runs out (a holder that crashed
// never gives it back). The notify path bounds a webhook owner's
// deliveries in flight with them across processes and Lambda
// invocations (webhook.StoreLimiter), so one owner's slow receivers
// cannot take every delivery slot of the deployment.
type LeaseStore interface {
	// TakeLease takes one of key's n leases for holder until until: the
	// lease taken, or ok false (nothing written) when n leases of key
	// unexpired at now are held by others. A holder that already holds
	// one of them renews it.
	TakeLease(ctx context.Context, key, holder string, n int, until, now time.Time) (l Lease, ok bool, err error)
	// ReleaseLease gives l back. A lease no longer l's holder's (it
	// expired and another took it) is left alone; releasing twice is a
	// no-op.
	ReleaseLease(ctx context.Context, l Lease) error
}

// Lease is one of a key's leases, as TakeLease handed it out.
type Lease struct {
	Key    string
	Slot   int
	Holder string
}

// LeaseSlotName is the stored name of one lease slot of key (each backend
// keeps a slot as one record under this name).
func LeaseSlotName(key string, slot int) string {
	return "lease#" + key + "#" + strconv.Itoa(slot)
}

// LeaseStart is the slot a holder tries first: holders spread over the
// slots, so a take usually needs one write.
func LeaseStart(holder string, n int) int {
	var h uint32 = 2166136261
	for i := 0; i < len(holder); i++ {
		h = (h ^ uint32(holder[i])) * 16777619
	}
	return int(h % uint32(n))
}
