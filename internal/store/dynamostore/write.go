package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// planFunc describes a write afresh for an attempt: it reads the instance
// it changes (returned as stored, nil for a create) and plans from it.
type planFunc func(ctx context.Context) (*store.Write, map[string]types.AttributeValue, error)

// txWrite is one attempt at a store.Write: its transaction, built by
// buildInstance and one applier per part (apply.go).
type txWrite struct {
	w *store.Write
	// prior is the instance item as read (transition, delete): it carries
	// what only this store keeps on it (the admission shard).
	prior map[string]types.AttributeValue
	// instAV is the instance item the write puts (create, transition).
	instAV map[string]types.AttributeValue
	t      txn
	// keys name the item behind a role for the caller's error.
	keys map[string]string
	// oldest is the oldest event a delete stamps in its transaction.
	oldest int64
	// quotas are the write's quota reservations, one item each.
	quotas []store.QuotaReserve
}

// commitState is what the attempts at one write learn from each other.
type commitState struct {
	// dropped roles are marks that found nothing to mark: later attempts
	// leave them out.
	dropped map[string]bool
	// slot is the admission shard a create tries.
	slot *slotChoice
}

// commit runs a write to its end. A create is planned once; a transition
// or a delete is planned again after every cancellation from a fresh read,
// which tells a real conflict (the plan's ErrConflict) from a concurrent
// event append (only event_seq moved). Cancellations that are not the
// caller's error are retried up to maxAttempts, with a pause.
func (s *Store) commit(ctx context.Context, op, id string, plan planFunc) (*txWrite, error) {
	c := &commitState{dropped: map[string]bool{}}
	token := newRequestToken()
	var w *store.Write
	var prior map[string]types.AttributeValue
	failures := 0
	for attempt := 1; ; attempt++ {
		if w == nil || w.Kind != store.WriteCreate {
			var err error
			if w, prior, err = plan(ctx); err != nil {
				return nil, err
			}
		}
		x, err := s.build(w, prior, c)
		if err != nil {
			return nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, id, err)
		}
		out, err := s.run(ctx, &x.t, token.attempt(attempt))
		if err != nil {
			return nil, fail(op, s.instances, id, err)
		}
		if out == nil {
			return x, nil
		}
		again, err := s.judge(ctx, op, x, out, c)
		if err != nil {
			return nil, err
		}
		if again {
			continue
		}
		failures++
		lost := fmt.Errorf("transaction cancelled: %v", out)
		if failures >= s.maxAttempts {
			return nil, errContention(op, s.instances, id, failures, lost)
		}
		if err := pause(ctx, failures, lost); err != nil {
			return nil, err
		}
	}
}

// build turns w into one transaction: the instance and its event, then
// every part.
func (s *Store) build(w *store.Write, prior map[string]types.AttributeValue, c *commitState) (*txWrite, error) {
	x := &txWrite{w: w, prior: prior, keys: map[string]string{}}
	if err := s.buildInstance(x); err != nil {
		return nil, err
	}
	for _, p := range w.Parts {
		if err := s.apply(x, p, c); err != nil {
			return nil, err
		}
	}
	if w.Kind == store.WriteDelete {
		s.stampNewest(x)
	}
	return x, nil
}

// judge reads a cancelled attempt: the caller's error, or whether to try
// again at once (true: something was changed that needs no pause) or after
// a pause (false, nil). The caller's errors are checked in this order.
func (s *Store) judge(ctx context.Context, op string, x *txWrite, out *outcome, c *commitState) (bool, error) {
	create := x.w.Kind == store.WriteCreate
	switch {
	case out.failed[roleIdempotency]:
		return false, failWith(store.ErrDuplicateRequest, op, s.idempotency, x.keys[roleIdempotency])
	case create && (out.failed[roleInstance] || out.failed[roleEvent]):
		return false, failWith(store.ErrAlreadyExists, op, s.instances, x.w.Instance.ID)
	case out.failed[roleOutbox]:
		return false, failWith(store.ErrAlreadyExists, op, s.outbox, x.keys[roleOutbox])
	case out.failed[roleDelivery]:
		return false, failWith(store.ErrAlreadyExists, op, s.outbox, "delivery")
	case out.failed[roleTemplate]:
		return false, failWith(store.ErrTemplateChanged, op, s.templates, x.keys[roleTemplate])
	case out.failed[roleLedger]:
		return false, failWith(store.ErrBindLedgerChanged, op, s.counters, bindLedgerName)
	case out.failed[roleOwnerSlot]:
		return false, failWith(store.ErrOwnerQueueFull, op, s.counters, ownerCounterName(x.w.Instance.Owner))
	case out.failed[roleQuota(store.QuotaSubject{Kind: store.QuotaUser})] || out.failed[roleQuota(store.QuotaSubject{Kind: store.QuotaTeam})]:
		// Refused, or the use had room again by the time it was read.
		return true, s.quotaRefused(ctx, op, x, out)
	case out.failed[roleCounter]:
		return s.otherShard(ctx, op, x.w.Instance.ID, c)
	case out.failed[roleComplete] || out.failed[roleDispatch] || out.failed[roleInstance] || out.failed[roleEvent] || out.conflict:
		// The item to complete is gone (expired or never written), or
		// the one to dispatch is no longer pending: nothing to mark.
		c.dropped[roleComplete] = c.dropped[roleComplete] || out.failed[roleComplete]
		c.dropped[roleDispatch] = c.dropped[roleDispatch] || out.failed[roleDispatch]
		return false, nil
	}
	return false, out.unexpected(op, s.instances, x.w.Instance.ID)
}
