package boltstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// instanceIndex is a sparse index of the instances that every instance
// write keeps in step: a bucket whose keys (key of an instance; nil when
// the instance is not in the index) map to nothing.
type instanceIndex struct {
	bucket []byte
	// what names the index in errors.
	what string
	key  func(in *container.Instance) []byte
}

// deadlineIndex: idx_deadline. nodeBucketIndex: idx_node_bucket.
var (
	deadlineIndex   = instanceIndex{bucket: bucketDeadlineIdx, what: "deadline", key: deadlineIdxKeyOf}
	nodeBucketIndex = instanceIndex{bucket: bucketNodeBucketIdx, what: "node bucket", key: nodeBucketIdxKey}
)

// move keeps ix in step with a write that takes an instance from prior to
// next (either nil: created, removed).
func (ix instanceIndex) move(tx *bolt.Tx, prior, next *container.Instance) error {
	from, to := ix.key(prior), ix.key(next)
	if bytes.Equal(from, to) {
		return nil
	}
	b := tx.Bucket(ix.bucket)
	if from != nil {
		if err := b.Delete(from); err != nil {
			return fmt.Errorf("unindex %s of %s: %w", ix.what, prior.ID, err)
		}
	}
	if to != nil {
		if err := b.Put(to, nil); err != nil {
			return fmt.Errorf("index %s of %s: %w", ix.what, next.ID, err)
		}
	}
	return nil
}

// build fills ix from the instances: the one-time build of an index for a
// file written before it existed.
func (ix instanceIndex) build(tx *bolt.Tx) error {
	return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
		var rec instanceRecord
		if err := decodeJSON(k, v, &rec); err != nil {
			return err
		}
		in := rec.instance()
		return ix.move(tx, nil, &in)
	})
}

// page reads up to limit of ix's instances in key order, from the key
// after after (nil: the first) while within holds, each loaded by the id
// idOf reads from its key; a key whose instance is gone is skipped. The
// page's cursor is of kind.
func (ix instanceIndex) page(tx *bolt.Tx, kind byte, after []byte, limit int, within func(k []byte) bool,
	idOf func(k []byte) string) (store.Page[container.Instance], error) {
	var page store.Page[container.Instance]
	c := tx.Bucket(ix.bucket).Cursor()
	var lastKey []byte
	for k, _ := first(c, after); k != nil && within(k); k, _ = c.Next() {
		if len(page.Items) == limit {
			page.NextCursor = encodeCursor(kind, lastKey)
			return page, nil
		}
		in, found, err := loadInstance(tx, idOf(k))
		if err != nil {
			return store.Page[container.Instance]{}, err
		}
		if found {
			page.Items = append(page.Items, in)
			lastKey = bytes.Clone(k)
		}
	}
	return page, nil
}
