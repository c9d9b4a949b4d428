package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// commit writes w in tx: the instance's own checks, every part through its
// applier (apply.go), then the event and the instance. Any error rolls the
// whole transaction back, so the order only decides which error a write
// breaking several conditions reports.
func commit(tx *bolt.Tx, w *store.Write) error {
	if w.Kind == store.WriteCreate {
		if err := idFree(tx, w.Instance.ID); err != nil {
			return err
		}
	}
	for _, p := range w.Parts {
		if err := apply(tx, w, p); err != nil {
			return err
		}
	}
	if w.Event != nil {
		if err := putEvent(tx, *w.Event); err != nil {
			return err
		}
	}
	switch w.Kind {
	case store.WriteCreate:
		if err := moveIndexes(tx, nil, &w.Instance); err != nil {
			return err
		}
		return saveInstance(tx, w.Instance, "")
	case store.WriteTransition:
		if err := moveIndexes(tx, &w.Prior, &w.Instance); err != nil {
			return err
		}
		return saveInstance(tx, w.Instance, w.Prior.Status)
	case store.WriteDelete:
		return remove(tx, w)
	}
	return fmt.Errorf("write of kind %d: %w", w.Kind, store.ErrInvalidParams)
}

// moveIndexes keeps the sparse indexes (idx_deadline, idx_node_bucket) in
// step with a write that takes an instance from prior to next (either nil:
// created, removed).
func moveIndexes(tx *bolt.Tx, prior, next *container.Instance) error {
	for _, ix := range []instanceIndex{deadlineIndex, nodeBucketIndex} {
		if err := ix.move(tx, prior, next); err != nil {
			return err
		}
	}
	return nil
}

// idFree is ErrAlreadyExists when id is taken. An id whose deleted
// predecessor's events are still retained counts as taken, so two
// histories never share one id.
func idFree(tx *bolt.Tx, id string) error {
	if tx.Bucket(bucketInstances).Get([]byte(id)) != nil {
		return fmt.Errorf("instance %s: %w", id, store.ErrAlreadyExists)
	}
	if tx.Bucket(bucketDeleted).Get([]byte(id)) != nil {
		return fmt.Errorf("instance %s was deleted and its events are retained: %w", id, store.ErrAlreadyExists)
	}
	return nil
}

// remove deletes the instance and its index entries and leaves a deletion
// marker that keeps the events readable until store.EventRetention has
// passed (then Purge removes both).
func remove(tx *bolt.Tx, w *store.Write) error {
	if err := removeInstance(tx, w.Prior); err != nil {
		return err
	}
	if err := moveIndexes(tx, &w.Prior, nil); err != nil {
		return err
	}
	mark := deletionRecord{DeletedAt: w.At, Owner: w.Prior.Owner, LastSeq: w.Event.Seq}
	if err := putJSON(tx.Bucket(bucketDeleted), []byte(w.Prior.ID), mark); err != nil {
		return err
	}
	return putExpiry(tx, mark.expiresAt(), expireEvents, []byte(w.Prior.ID))
}
