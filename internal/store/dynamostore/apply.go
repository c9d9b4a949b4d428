package dynamostore

import (
	"fmt"

	"github.com/berth-io/berth/internal/store"
)

// apply adds one part of a write to its transaction, through the applier
// of its kind; judge (write.go) says what each role's failed condition means.
func (s *Store) apply(x *txWrite, part store.Part, c *commitState) error {
	switch p := part.(type) {
	case store.NewOutbox:
		return s.applyNewOutbox(x, p)
	case store.CompleteOutbox:
		if !c.dropped[roleComplete] {
			x.t.update(roleComplete, s.outbox, outboxKey(p.ID), outboxDone(x.w.At))
		}
	case store.DispatchOutbox:
		if !c.dropped[roleDispatch] {
			x.t.update(roleDispatch, s.outbox, outboxKey(p.ID), outboxDispatched(x.w.At))
		}
	case store.Admission:
		s.applyAdmission(x, p, c)
	case store.SaveIdempotency:
		item, cond, err := s.idempotencyPut(p.Record, x.w.At)
		if err != nil {
			return err
		}
		x.t.put(roleIdempotency, s.idempotency, item, cond)
		x.keys[roleIdempotency] = idempotencyKey(p.Record.Owner, p.Record.Key)
	case store.TemplateUnchanged:
		cond, err := templateUnchanged(p.Template)
		if err != nil {
			return err
		}
		x.t.check(roleTemplate, s.templates, templateKey(p.Template.Name), cond)
		x.keys[roleTemplate] = p.Template.Name
	case store.BindLedgerPut:
		return s.ledgerPut(&x.t, p)
	case store.QuotaReserve:
		s.applyQuota(x, p)
	case store.UsageAdd:
		s.applyUsage(x, p)
	default:
		return fmt.Errorf("no applier for a %T: %w", part, store.ErrInvalidParams)
	}
	return nil
}

func (s *Store) applyNewOutbox(x *txWrite, p store.NewOutbox) error {
	av, err := marshalOutbox(p.Item)
	if err != nil {
		return err
	}
	role := roleOutbox
	if p.Delivery {
		role = roleDelivery
	}
	x.t.put(role, s.outbox, av, notExists(AttrID))
	x.keys[role] = p.Item.ID
	return nil
}
