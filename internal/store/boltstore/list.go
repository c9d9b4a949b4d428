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

// ListInstances walks, in id order and from just after the cursor's id, the
// narrowest index the query allows: with statuses, the (owner) status index
// of each, merged; else the owner index (owner set) or the instances bucket
// (every owner). A status filter thus reads only instances in those
// statuses, not every instance of the owner or of the store. Because ids
// only grow, an instance created during the walk lands after every position
// already passed or is seen later, never shifting the walk: nothing that
// exists for the whole walk is repeated or skipped.
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
		next := instanceWalk(tx, q, after)
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

// instanceWalk returns an iterator, in id order, over the instances after
// the id `after` (all of them if nil) that q's owner and statuses can
// match; the caller still checks each with matches.
func instanceWalk(tx *bolt.Tx, q store.ListQuery, after []byte) func() (container.Instance, bool, error) {
	statuses := slices.Clone(q.Statuses)
	slices.Sort(statuses)
	statuses = slices.Compact(statuses) // one prefix each, or the merge repeats ids
	switch {
	case len(statuses) > 0:
		prefixes := make([][]byte, 0, len(statuses))
		bucket := bucketStatusIdx
		if q.Owner != "" {
			bucket = bucketOwnerStatus
		}
		for _, st := range statuses {
			if q.Owner != "" {
				prefixes = append(prefixes, ownerStatusKey(q.Owner, st, ""))
			} else {
				prefixes = append(prefixes, prefixKey(string(st)))
			}
		}
		return indexWalk(tx, bucket, prefixes, after)
	case q.Owner != "":
		return indexWalk(tx, bucketOwnerIdx, [][]byte{prefixKey(q.Owner)}, after)
	}
	c := tx.Bucket(bucketInstances).Cursor()
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

// indexWalk merges the index entries of bucket under each prefix (the rest
// of each key is an instance id) into one walk in id order, from after the
// id `after`, and loads each instance.
func indexWalk(tx *bolt.Tx, bucket []byte, prefixes [][]byte, after []byte) func() (container.Instance, bool, error) {
	type head struct {
		c      *bolt.Cursor
		prefix []byte
		id     []byte // nil once the prefix is exhausted
	}
	set := func(h *head, k []byte) {
		h.id = nil
		if k != nil && bytes.HasPrefix(k, h.prefix) {
			h.id = k[len(h.prefix):]
		}
	}
	heads := make([]*head, 0, len(prefixes))
	for _, p := range prefixes {
		h := &head{c: tx.Bucket(bucket).Cursor(), prefix: p}
		if after == nil {
			k, _ := h.c.Seek(p)
			set(h, k)
		} else {
			k, _ := first(h.c, append(bytes.Clone(p), after...))
			set(h, k)
		}
		heads = append(heads, h)
	}
	return func() (container.Instance, bool, error) {
		for {
			var low *head
			for _, h := range heads {
				if h.id != nil && (low == nil || bytes.Compare(h.id, low.id) < 0) {
					low = h
				}
			}
			if low == nil {
				return container.Instance{}, false, nil
			}
			id := string(low.id)
			k, _ := low.c.Next()
			set(low, k)
			in, found, err := loadInstance(tx, id)
			if err != nil {
				return container.Instance{}, false, err
			}
			if found {
				return in, true, nil
			}
		}
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
	// The owner check keeps an owner that itself contains the separator
	// from reading another owner's index entries.
	if q.Owner != "" && in.Owner != q.Owner {
		return false
	}
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
