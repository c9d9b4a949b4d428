package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// ListEvents returns the events oldest first, limit 0 meaning 50 and at
// most 100, like the instance listings. The cursor is the last returned seq.
// A deleted instance's events stay readable until its deletion marker
// expires (store.EventRetention), whether or not Purge has run.
func (s *Store) ListEvents(ctx context.Context, instanceID, cursor string, limit int) (store.Page[container.Event], error) {
	var page store.Page[container.Event]
	after, err := decodeCursor(cursorEvents, cursor)
	if err != nil {
		return page, err
	}
	if after != nil && len(after) != 8 {
		return page, fmt.Errorf("%w: %q", ErrInvalidCursor, cursor)
	}
	limit = pageLimit(limit)
	err = s.view(ctx, "list events of "+instanceID, func(tx *bolt.Tx) error {
		if err := eventsReadable(tx, instanceID, s); err != nil {
			return err
		}
		prefix := prefixKey(instanceID)
		c := tx.Bucket(bucketEvents).Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.Seek(prefix)
		} else {
			k, v = first(c, eventKey(instanceID, int64(binary.BigEndian.Uint64(after))))
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Next() {
			if len(page.Items) == limit {
				last := page.Items[limit-1].Seq
				page.NextCursor = encodeCursor(cursorEvents, int64Bytes(last))
				return nil
			}
			var ev container.Event
			if err := decodeJSON(k, v, &ev); err != nil {
				return err
			}
			page.Items = append(page.Items, ev)
		}
		return nil
	})
	if err != nil {
		return store.Page[container.Event]{}, err
	}
	return page, nil
}

func eventsReadable(tx *bolt.Tx, id string, s *Store) error {
	if tx.Bucket(bucketInstances).Get([]byte(id)) != nil {
		return nil
	}
	var mark deletionRecord
	found, err := getJSON(tx.Bucket(bucketDeleted), []byte(id), &mark)
	if err != nil {
		return err
	}
	if found && s.now().Before(mark.expiresAt()) {
		return nil
	}
	return fmt.Errorf("events of instance %s: %w", id, store.ErrNotFound)
}
