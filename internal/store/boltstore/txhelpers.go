package boltstore

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// The helpers here run inside a transaction the caller owns; each keeps one
// record and its index entries in step.

func loadInstance(tx *bolt.Tx, id string) (container.Instance, bool, error) {
	var rec instanceRecord
	found, err := getJSON(tx.Bucket(bucketInstances), []byte(id), &rec)
	if !found || err != nil {
		return container.Instance{}, found, err
	}
	return rec.instance(), true, nil
}

func mustLoadInstance(tx *bolt.Tx, id string) (container.Instance, error) {
	in, found, err := loadInstance(tx, id)
	if err != nil {
		return container.Instance{}, err
	}
	if !found {
		return container.Instance{}, fmt.Errorf("instance %s: %w", id, store.ErrNotFound)
	}
	return in, nil
}

// saveInstance writes in and moves its status index entry from oldStatus;
// an empty oldStatus means the instance is new and gets all its entries.
func saveInstance(tx *bolt.Tx, in container.Instance, oldStatus fsm.Status) error {
	if err := putJSON(tx.Bucket(bucketInstances), []byte(in.ID), newInstanceRecord(in)); err != nil {
		return err
	}
	if oldStatus == in.Status {
		return nil
	}
	status, ownerStatus := tx.Bucket(bucketStatusIdx), tx.Bucket(bucketOwnerStatus)
	if oldStatus == "" {
		if err := tx.Bucket(bucketOwnerIdx).Put(joinKey(in.Owner, in.ID), nil); err != nil {
			return fmt.Errorf("index owner of %s: %w", in.ID, err)
		}
	} else {
		if err := status.Delete(joinKey(string(oldStatus), in.ID)); err != nil {
			return fmt.Errorf("unindex status of %s: %w", in.ID, err)
		}
		if err := ownerStatus.Delete(ownerStatusKey(in.Owner, oldStatus, in.ID)); err != nil {
			return fmt.Errorf("unindex owner status of %s: %w", in.ID, err)
		}
	}
	if err := status.Put(joinKey(string(in.Status), in.ID), nil); err != nil {
		return fmt.Errorf("index status of %s: %w", in.ID, err)
	}
	if err := ownerStatus.Put(ownerStatusKey(in.Owner, in.Status, in.ID), nil); err != nil {
		return fmt.Errorf("index owner status of %s: %w", in.ID, err)
	}
	return nil
}

// indexOwnerStatus builds idx_owner_status from the instances: the one-time
// build of the index for a file written before it existed.
func indexOwnerStatus(tx *bolt.Tx) error {
	idx := tx.Bucket(bucketOwnerStatus)
	return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
		var rec instanceRecord
		if err := decodeJSON(k, v, &rec); err != nil {
			return err
		}
		if err := idx.Put(ownerStatusKey(rec.Instance.Owner, rec.Instance.Status, rec.Instance.ID), nil); err != nil {
			return fmt.Errorf("index owner status of %s: %w", k, err)
		}
		return nil
	})
}

func removeInstance(tx *bolt.Tx, in container.Instance) error {
	if err := tx.Bucket(bucketInstances).Delete([]byte(in.ID)); err != nil {
		return fmt.Errorf("delete %s: %w", in.ID, err)
	}
	if err := tx.Bucket(bucketOwnerIdx).Delete(joinKey(in.Owner, in.ID)); err != nil {
		return fmt.Errorf("unindex owner of %s: %w", in.ID, err)
	}
	if err := tx.Bucket(bucketStatusIdx).Delete(joinKey(string(in.Status), in.ID)); err != nil {
		return fmt.Errorf("unindex status of %s: %w", in.ID, err)
	}
	if err := tx.Bucket(bucketOwnerStatus).Delete(ownerStatusKey(in.Owner, in.Status, in.ID)); err != nil {
		return fmt.Errorf("unindex owner status of %s: %w", in.ID, err)
	}
	return nil
}

func putEvent(tx *bolt.Tx, ev container.Event) error {
	return putJSON(tx.Bucket(bucketEvents), eventKey(ev.InstanceID, ev.Seq), ev)
}

func admissionCount(tx *bolt.Tx) int64 {
	return int64FromBytes(tx.Bucket(bucketCounters).Get(keyAdmission))
}

func setAdmission(tx *bolt.Tx, n int64) error {
	if err := tx.Bucket(bucketCounters).Put(keyAdmission, int64Bytes(n)); err != nil {
		return fmt.Errorf("write admission counter: %w", err)
	}
	return nil
}

// addAdmission never takes the counter below zero: a release without a
// matching take (only possible after a manual repair) must not hand out
// extra slots later.
func addAdmission(tx *bolt.Tx, delta int64) error {
	return setAdmission(tx, max(0, admissionCount(tx)+delta))
}

// putExpiry schedules ref for Purge; Purge re-checks the record itself, so a
// stale entry (the record changed since) is harmless.
func putExpiry(tx *bolt.Tx, at time.Time, kind byte, ref []byte) error {
	if err := tx.Bucket(bucketExpiry).Put(expiryKey(at, kind, ref), nil); err != nil {
		return fmt.Errorf("schedule expiry of %q: %w", ref, err)
	}
	return nil
}
