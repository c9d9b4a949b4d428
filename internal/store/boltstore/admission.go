package boltstore

import (
	"bytes"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/fsm"
)

// AdmissionCount returns the number of creates in flight as the counter has it.
func (s *Store) AdmissionCount(ctx context.Context) (int, error) {
	var n int64
	err := s.view(ctx, "admission count", func(tx *bolt.Tx) error {
		n = admissionCount(tx)
		return nil
	})
	return int(n), err
}

// RepairAdmission counts the pending and creating entries of the status
// index (no instance is decoded) and stores that as the counter, in one
// transaction so no create or transition slips in between count and write.
func (s *Store) RepairAdmission(ctx context.Context) (before, after int, err error) {
	err = s.update(ctx, "repair admission", func(tx *bolt.Tx) error {
		before = int(admissionCount(tx))
		after = 0
		c := tx.Bucket(bucketStatusIdx).Cursor()
		for _, st := range fsm.All {
			if !st.HoldsCreateSlot() {
				continue
			}
			prefix := prefixKey(string(st))
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				after++
			}
		}
		return setAdmission(tx, int64(after))
	})
	if err != nil {
		return 0, 0, err
	}
	return before, after, nil
}

// ownerCreates counts owner's instances in pending and creating, up to
// limit, from the owner and status index: exact in the create's own
// transaction (bbolt's are serializable), so bolt keeps no per-owner
// counter. This create's own instance is saved after its parts.
func ownerCreates(tx *bolt.Tx, owner string, limit int) int {
	n := 0
	c := tx.Bucket(bucketOwnerStatus).Cursor()
	for _, st := range fsm.All {
		if !st.HoldsCreateSlot() {
			continue
		}
		prefix := joinKey(owner, string(prefixKey(string(st))))
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
			n++
		}
	}
	return n
}
