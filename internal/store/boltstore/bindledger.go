package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// keyBindLedger holds the bind ledger in the meta bucket.
var keyBindLedger = []byte("bind_ledger")

// GetBindLedger returns the stored ledger, or a zero one.
func (s *Store) GetBindLedger(ctx context.Context) (container.BindLedger, error) {
	var l container.BindLedger
	err := s.view(ctx, "get bind ledger", func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketMeta), keyBindLedger, &l)
		return err
	})
	if err != nil {
		return container.BindLedger{}, err
	}
	return l, nil
}

// PutBindLedger replaces the ledger if it is still at l.Version.
func (s *Store) PutBindLedger(ctx context.Context, l container.BindLedger) (container.BindLedger, error) {
	put := store.PlanLedger(l, s.now())
	err := s.update(ctx, "put bind ledger", func(tx *bolt.Tx) error { return putLedger(tx, put) })
	if err != nil {
		return container.BindLedger{}, err
	}
	return put.Ledger, nil
}

// PutTemplateWithLedger writes the template and the ledger in one
// transaction.
func (s *Store) PutTemplateWithLedger(ctx context.Context, t container.Template, l container.BindLedger) (container.Template, bool, error) {
	if t.Name == "" {
		return container.Template{}, false, fmt.Errorf("boltstore: put template: template has no name")
	}
	var created bool
	put := store.PlanLedger(l, s.now())
	err := s.update(ctx, "put template "+t.Name+" with bind ledger", func(tx *bolt.Tx) error {
		if err := putLedger(tx, put); err != nil {
			return err
		}
		var err error
		t, created, err = s.putTemplate(tx, t)
		return err
	})
	if err != nil {
		return container.Template{}, false, err
	}
	return t, created, nil
}

// putLedger is the applier of a store.BindLedgerPut.
func putLedger(tx *bolt.Tx, put store.BindLedgerPut) error {
	b := tx.Bucket(bucketMeta)
	var cur container.BindLedger
	if _, err := getJSON(b, keyBindLedger, &cur); err != nil {
		return err
	}
	if want := put.Ledger.Version - 1; cur.Version != want {
		return fmt.Errorf("bind ledger at version %d, not %d: %w", cur.Version, want, store.ErrBindLedgerChanged)
	}
	return putJSON(b, keyBindLedger, put.Ledger)
}
