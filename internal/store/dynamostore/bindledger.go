package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// bindLedgerName is the counters item holding the bind ledger: one item
// (its JSON in AttrDoc, its version in AttrLedgerVersion), so a template
// write and the ledger write commit in one transaction of two items. An
// item holds 400 KB: thousands of patterns.
const bindLedgerName = "bind_ledger"

// Attributes of the bind ledger item.
const (
	AttrDoc           = "doc"
	AttrLedgerVersion = "version"
)

const roleLedger = "bind-ledger"

// GetBindLedger returns the stored ledger, or a zero one.
func (s *Store) GetBindLedger(ctx context.Context) (container.BindLedger, error) {
	var l container.BindLedger
	if err := s.getDoc(ctx, "get bind ledger", bindLedgerName, &l); err != nil {
		return container.BindLedger{}, err
	}
	return l, nil
}

// ledgerPut is the applier of a store.BindLedgerPut: a put conditioned
// on the stored version (no item for version 1).
func (s *Store) ledgerPut(t *txn, put store.BindLedgerPut) error {
	item, cond, err := docPut(bindLedgerName, put.Ledger, put.Ledger.Version)
	if err != nil {
		return err
	}
	t.put(roleLedger, s.counters, item, cond)
	return nil
}

// PutBindLedger replaces the ledger if it is still at l.Version.
func (s *Store) PutBindLedger(ctx context.Context, l container.BindLedger) (container.BindLedger, error) {
	const op = "put bind ledger"
	t := &txn{}
	put := store.PlanLedger(l, s.now())
	if err := s.ledgerPut(t, put); err != nil {
		return container.BindLedger{}, fmt.Errorf("dynamostore: %s: %w", op, err)
	}
	token := newRequestToken()
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		out, err := s.run(ctx, t, token.attempt(attempt))
		switch {
		case err != nil:
			return container.BindLedger{}, fail(op, s.counters, bindLedgerName, err)
		case out == nil:
			return put.Ledger, nil
		case out.failed[roleLedger]:
			return container.BindLedger{}, failWith(store.ErrBindLedgerChanged, op, s.counters, bindLedgerName)
		case !out.conflict:
			return container.BindLedger{}, out.unexpected(op, s.counters, bindLedgerName)
		}
		if err := pause(ctx, attempt, errors.New("transaction conflict")); err != nil {
			return container.BindLedger{}, err
		}
	}
	return container.BindLedger{}, errContention(op, s.counters, bindLedgerName, s.maxAttempts, errors.New("transaction conflict"))
}

// PutTemplateWithLedger writes the template (bumping its version, as
// PutTemplate) and the ledger in one transaction.
func (s *Store) PutTemplateWithLedger(ctx context.Context, t container.Template, l container.BindLedger) (container.Template, bool, error) {
	const op = "put template with bind ledger"
	put := store.PlanLedger(l, s.now())
	return s.putTemplate(ctx, op, t, func(item map[string]types.AttributeValue, cond *expr) (error, error) {
		tx := &txn{}
		tx.put(roleTemplate, s.templates, item, cond)
		if err := s.ledgerPut(tx, put); err != nil {
			return nil, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		out, err := s.run(ctx, tx, newRequestToken().attempt(1))
		switch {
		case err != nil:
			return nil, fail(op, s.templates, t.Name, err)
		case out == nil:
			return nil, nil
		case out.failed[roleLedger]:
			return nil, failWith(store.ErrBindLedgerChanged, op, s.counters, bindLedgerName)
		case out.failed[roleTemplate], out.conflict:
			return fmt.Errorf("transaction cancelled: %v", out), nil // another put won; build on its version
		}
		return nil, out.unexpected(op, s.templates, t.Name)
	})
}
