package boltstore

import (
	"bytes"
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// ListInstances walks the owner index (owner set) or the instances bucket
// (every owner), both in id order, from just after the cursor's id. Because
// ids only grow, an instance created during the walk lands after every
// position already passed or is seen later, never shifting the walk: nothing
// that exists for the whole walk is repeated or skipped.
//
// NextCursor is set only when another matching instance exists: the walk
// looks one match ahead, so a client never gets an empty last page.
func (s *Store) ListInstances(ctx context.Context, q store.ListQuery) (store.Page[container.Instance], error) {
	var page store.Page[container.Instance]
	after, err := decodeCursor(cursorInstances, q.Cursor)
	if err != nil {
		return page, err
	}
	limit := pageLimit(q.Limit)
	err = s.view(ctx, "list instances", func(tx *bolt.Tx) error {
		next := instanceWalk(tx, q.Owner, after)
		for {
			in, ok, err := next()
			if err != nil || !ok {
				return err
			}
			if !matches(in, q) {
				continue
			}
			if len(page.Items) == limit {
				page.NextCursor = encodeCursor(cursorInstances, []byte(page.Items[limit-1].ID))
				return nil
			}
			page.Items = append(page.Items, in)
		}
	})
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return page, nil
}

// instanceWalk returns an iterator over the instances after the id `after`
// (all of them if nil), of one owner or of all.
func instanceWalk(tx *bolt.Tx, owner string, after []byte) func() (container.Instance, bool, error) {
	instances := tx.Bucket(bucketInstances)
	if owner == "" {
		c := instances.Cursor()
		k, v := first(c, after)
		return func() (container.Instance, bool, error) {
			if k == nil {
				return container.Instance{}, false, nil
			}
			var rec instanceRecord
			if err := decodeJSON(k, v, &rec); err != nil {
				return container.Instance{}, false, err
			}
			k, v = c.Next()
			return rec.instance(), true, nil
		}
	}
	prefix := prefixKey(owner)
	c := tx.Bucket(bucketOwnerIdx).Cursor()
	var k []byte
	if after == nil {
		k, _ = c.Seek(prefix)
	} else {
		k, _ = first(c, append(bytes.Clone(prefix), after...))
	}
	return func() (container.Instance, bool, error) {
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			in, found, err := loadInstance(tx, string(k[len(prefix):]))
			if err != nil {
				return container.Instance{}, false, err
			}
			// The owner check keeps an owner that itself contains the
			// separator from reading another owner's entries.
			if found && in.Owner == owner {
				k, _ = c.Next()
				return in, true, nil
			}
		}
		return container.Instance{}, false, nil
	}
}

// first positions c on the first key after `after` (the first key if nil).
func first(c *bolt.Cursor, after []byte) (k, v []byte) {
	if after == nil {
		return c.First()
	}
	k, v = c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	return k, v
}

func matches(in container.Instance, q store.ListQuery) bool {
	if len(q.Statuses) > 0 && !slices.Contains(q.Statuses, in.Status) {
		return false
	}
	if q.Template != "" && in.Template != q.Template {
		return false
	}
	if q.Group != "" && in.Group != q.Group {
		return false
	}
	for k, v := range q.Labels {
		if got, ok := in.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ListActive walks the status index and jumps over the stopped and failed
// ranges, so terminal instances are never read. The order is by status, then
// id; an instance that changes status during a walk may be seen twice or not
// at all, which the reconciler (its only user) tolerates: it runs again.
func (s *Store) ListActive(ctx context.Context, cursor string, limit int) (store.Page[container.Instance], error) {
	var page store.Page[container.Instance]
	after, err := decodeCursor(cursorActive, cursor)
	if err != nil {
		return page, err
	}
	limit = pageLimit(limit)
	err = s.view(ctx, "list active", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketStatusIdx).Cursor()
		var lastKey []byte
		k, _ := first(c, after)
		for k != nil {
			i := bytes.IndexByte(k, sep)
			if i >= 0 && fsm.Status(k[:i]).Terminal() {
				k, _ = c.Seek(afterPrefix(k[:i+1]))
				continue
			}
			if i >= 0 {
				if len(page.Items) == limit {
					page.NextCursor = encodeCursor(cursorActive, lastKey)
					return nil
				}
				in, found, err := loadInstance(tx, string(k[i+1:]))
				if err != nil {
					return err
				}
				if found {
					page.Items = append(page.Items, in)
					lastKey = bytes.Clone(k)
				}
			}
			k, _ = c.Next()
		}
		return nil
	})
	if err != nil {
		return store.Page[container.Instance]{}, err
	}
	return page, nil
}
