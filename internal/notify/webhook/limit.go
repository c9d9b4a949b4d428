package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/store"
)

// DefaultOwnerInFlight is how many deliveries of one subscription owner
// are in flight at once, whatever the number of its subscriptions: a
// receiver that hangs holds at most this many of the deployment's
// delivery slots (`berth serve`'s 16 consumers, the notify function's
// concurrency of 10 on AWS, 4 in the emulated stack), and every other
// owner's deliveries go on in the rest. At most half the smallest pool:
// at 4 one hanging owner held all of the emulated stack's notify
// environments and a healthy receiver's changes came up to 91 s late
// (TestEmulateChaos). Defaults to 2.
const DefaultOwnerInFlight = 2

// Limiter bounds the deliveries in flight per subscription owner.
// Deliverer takes a slot before each POST and gives it back after.
type Limiter interface {
	// Acquire takes one of owner's slots for the delivery holder (its
	// outbox item's id): release gives it back; ok is false (nothing
	// taken) when owner's slots are all held.
	Acquire(ctx context.Context, owner, holder string) (release func(), ok bool, err error)
}

// BusyError is a delivery not attempted because its subscription's owner
// already has its share of deliveries in flight: not a failure of the
// receiver; the worker sends the delivery again a little later, spending
// none of its retries.
type BusyError struct{ Owner string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("owner %q has its share of webhook deliveries in flight; deferred", e.Owner)
}

// Deferred reports that the delivery was put off, not attempted.
func (e *BusyError) Deferred() bool { return true }

// LocalLimiter is a Limiter for one process (`berth serve`): PerOwner
// (DefaultOwnerInFlight when 0 or less) slots per owner, counted in
// memory. Its zero value is ready to use.
type LocalLimiter struct {
	PerOwner int
	mu       sync.Mutex
	held     map[string]int
}

var _ Limiter = (*LocalLimiter)(nil)

// Acquire takes one of owner's slots.
func (l *LocalLimiter) Acquire(_ context.Context, owner, _ string) (func(), bool, error) {
	limit := l.PerOwner
	if limit <= 0 {
		limit = DefaultOwnerInFlight
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]int{}
	}
	if l.held[owner] >= limit {
		return nil, false, nil
	}
	l.held[owner]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.held[owner]--; l.held[owner] <= 0 {
				delete(l.held, owner)
			}
		})
	}, true, nil
}

// StoreLimiter is a Limiter shared by every process and Lambda invocation
// of a deployment: an owner's slots are leases in the store
// (store.LeaseStore), each held for at most Hold (a holder that crashed
// gives its slot back by then).
type StoreLimiter struct {
	Leases store.LeaseStore
	// PerOwner defaults to DefaultOwnerInFlight.
	PerOwner int
	// Hold defaults to DefaultLeaseHold.
	Hold time.Duration
	// Clock defaults to time.Now.
	Clock func() time.Time
}

// DefaultLeaseHold bounds a StoreLimiter's slot: twice a delivery's own
// bound (DefaultTimeout), which covers the notify function's timeout (30
// s) after which its invocation is gone. Defaults to 30 s.
const DefaultLeaseHold = 2 * DefaultTimeout

var _ Limiter = (*StoreLimiter)(nil)

// Acquire takes one of owner's leases for holder.
func (l *StoreLimiter) Acquire(ctx context.Context, owner, holder string) (func(), bool, error) {
	limit, hold, now := l.PerOwner, l.Hold, time.Now
	if limit <= 0 {
		limit = DefaultOwnerInFlight
	}
	if hold <= 0 {
		hold = DefaultLeaseHold
	}
	if l.Clock != nil {
		now = l.Clock
	}
	at := now()
	lease, ok, err := l.Leases.TakeLease(ctx, "webhook-owner#"+owner, holder, limit, at.Add(hold), at)
	if err != nil || !ok {
		return nil, false, err
	}
	return func() {
		// Given back even when the delivery's context ended; a lease
		// that cannot be released runs out by itself.
		_ = l.Leases.ReleaseLease(context.WithoutCancel(ctx), lease)
	}, true, nil
}
