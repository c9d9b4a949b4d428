package dynamostore

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/berth-io/berth/internal/store"
)

// Cursor kinds: a cursor is only accepted by the listing that issued it.
const (
	cursorOwner    = "owner"    // ListInstances with Owner: by_owner after ID
	cursorStatuses = "statuses" // ListInstances without Owner, with Statuses: Index-th status, Shard-th shard, after ID
	cursorScan     = "scan"     // ListInstances without Owner or Statuses: table scan after ID
	cursorActive   = "active"   // ListActive: Index-th non-terminal status, Shard-th shard, after ID
	cursorEvents   = "events"   // ListEvents: after Seq
	cursorBucket   = "bucket"   // ListActiveInBucket: bucket Index, after ID
)

// cursor is the position after the last item of a page. It names the last
// item returned rather than DynamoDB's LastEvaluatedKey, because a page
// stops at Limit matching items, usually mid-way through a DynamoDB page.
// Resuming strictly after a key never repeats or skips an item that exists
// for the whole walk: keys are unique and the walk is in key order.
type cursor struct {
	Kind  string `json:"q"`
	Index int    `json:"i,omitempty"`
	Shard int    `json:"n,omitempty"`
	ID    string `json:"k,omitempty"`
	Seq   int64  `json:"s,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // a struct of strings and ints always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor parses s; "" is the start of the listing (the zero cursor).
func decodeCursor(s, kind string) (cursor, error) {
	if s == "" {
		return cursor{Kind: kind}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil && c.Kind != kind {
		err = fmt.Errorf("issued by a %s listing, used for a %s listing", c.Kind, kind)
	}
	if err == nil && (c.Index < 0 || c.Seq < 0 || c.Shard < 0 || c.Shard >= IndexShards) {
		err = fmt.Errorf("out of range")
	}
	if err != nil {
		return cursor{}, fmt.Errorf("dynamostore: cursor %q: %w: %w", s, store.ErrInvalidCursor, err)
	}
	return c, nil
}

// pageLimit applies the listing limits of store.ListQuery: 0 means 50, at
// most 100.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 100:
		return 100
	}
	return n
}
