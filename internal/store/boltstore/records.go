package boltstore

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// ErrInvalidCursor is returned for a cursor this store did not hand out.
// The store contract has no sentinel for bad input, so callers that map
// errors to HTTP statuses match this one (400) explicitly.
var ErrInvalidCursor = fmt.Errorf("boltstore: %w", store.ErrInvalidCursor)

// instanceRecord is an instance as stored. container.Instance hides Spec
// (secrets) and EventSeq from JSON because its JSON is the API's; the store
// must keep both, so they sit beside it.
type instanceRecord struct {
	Instance container.Instance `json:"instance"`
	Spec     container.Spec     `json:"spec"`
	EventSeq int64              `json:"event_seq"`
	// QuotaCounted is container.Instance.QuotaCounted.
	QuotaCounted bool `json:"quota_counted,omitempty"`
	// UsageCounted is container.Instance.UsageCounted.
	UsageCounted bool `json:"usage_counted,omitempty"`
}

func newInstanceRecord(in container.Instance) instanceRecord {
	return instanceRecord{Instance: in, Spec: in.Spec, EventSeq: in.EventSeq, QuotaCounted: in.QuotaCounted, UsageCounted: in.UsageCounted}
}

func (r instanceRecord) instance() container.Instance {
	in := r.Instance
	in.Spec = r.Spec
	in.EventSeq = r.EventSeq
	in.QuotaCounted = r.QuotaCounted
	in.UsageCounted = r.UsageCounted
	return in
}

// deletionRecord marks a deleted instance whose events are still readable.
type deletionRecord struct {
	DeletedAt time.Time `json:"deleted_at"`
	Owner     string    `json:"owner"`
	LastSeq   int64     `json:"last_seq"`
}

func (d deletionRecord) expiresAt() time.Time { return d.DeletedAt.Add(store.EventRetention) }

// getJSON decodes b's value at key into v; found is false if there is none.
func getJSON(b *bolt.Bucket, key []byte, v any) (found bool, err error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	return true, decodeJSON(key, raw, v)
}

func decodeJSON(key, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode record %q: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	if err := b.Put(key, raw); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}
