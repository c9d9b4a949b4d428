package boltstore

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

var (
	bucketInstances    = []byte("instances")
	bucketOwnerIdx     = []byte("idx_owner")
	bucketStatusIdx    = []byte("idx_status")
	bucketOwnerStatus  = []byte("idx_owner_status")
	bucketEvents       = []byte("events")
	bucketDeleted      = []byte("deleted")
	bucketOutbox       = []byte("outbox")
	bucketUndispatched = []byte("idx_undispatched")
	bucketDispatched   = []byte("idx_dispatched")
	bucketExpiry       = []byte("expiry")
	bucketTemplates    = []byte("templates")
	bucketIdempotency  = []byte("idempotency")
	bucketCounters     = []byte("counters")
	bucketMeta         = []byte("meta")

	allBuckets = [][]byte{
		bucketInstances, bucketOwnerIdx, bucketStatusIdx, bucketOwnerStatus, bucketEvents, bucketDeleted,
		bucketOutbox, bucketUndispatched, bucketDispatched, bucketExpiry, bucketTemplates, bucketIdempotency,
		bucketCounters, bucketMeta, bucketWebhookIdx, bucketDeadlineIdx, bucketNodeBucketIdx,
	}

	keyAdmission = []byte("admission")
	keySchema    = []byte("schema")
)

// sep joins the parts of composite keys. ULIDs, statuses and the owners the
// API accepts never contain it, and readers re-check the decoded record, so
// a stray 0x00 in an owner can only make a prefix walk look at more keys.
const sep = 0x00

func joinKey(a, b string) []byte {
	k := make([]byte, 0, len(a)+1+len(b))
	k = append(k, a...)
	k = append(k, sep)
	return append(k, b...)
}

// ownerStatusKey is the idx_owner_status key: owner 0x00 status 0x00 id.
func ownerStatusKey(owner string, status fsm.Status, id string) []byte {
	return joinKey(owner, string(joinKey(string(status), id)))
}

// prefixKey is "a 0x00": every joinKey(a, …) starts with it.
func prefixKey(a string) []byte { return joinKey(a, "") }

// afterPrefix is the smallest key greater than every key with the prefix,
// used to jump over a whole status in the status index.
func afterPrefix(prefix []byte) []byte {
	k := bytes.Clone(prefix)
	k[len(k)-1]++ // prefixes end in sep (0x00), so no overflow
	return k
}

func eventKey(id string, seq int64) []byte {
	k := prefixKey(id)
	return binary.BigEndian.AppendUint64(k, uint64(seq))
}

// timeBytes encodes t so that byte order equals time order: UnixNano with
// the sign bit flipped, big endian. Times outside UnixNano's range (years
// before 1678 or after 2262, and the zero time) are clamped.
func timeBytes(t time.Time) []byte {
	var n int64
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		n = math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		n = math.MaxInt64
	default:
		n = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(nil, uint64(n)^(1<<63))
}

func undispatchedKey(createdAt time.Time, id string) []byte {
	return append(timeBytes(createdAt), id...)
}

// Kinds of expiry entries.
const (
	expireEvents      byte = 'e' // ref: instance id (events and deletion marker)
	expireOutbox      byte = 'o' // ref: outbox id
	expireIdempotency byte = 'i' // ref: idempotency key (owner 0x00 key)
)

func expiryKey(at time.Time, kind byte, ref []byte) []byte {
	k := append(timeBytes(at), kind)
	return append(k, ref...)
}

func int64Bytes(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func int64FromBytes(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Cursors are opaque to callers: base64url of the walk position (an id, a
// status index key or an event seq). Decoding validates only the encoding;
// a position from another query just starts the walk elsewhere.
// Cursor kinds: a cursor of one listing is refused by another.
const (
	cursorInstances byte = 'i'
	cursorActive    byte = 'a'
	cursorDeadlines byte = 'd'
	cursorEvents    byte = 'e'
	// cursorDeliveries: ListDeliveries.
	cursorDeliveries byte = 'w'
)

// encodeCursor makes an opaque cursor: the listing's kind, the position
// (the last key returned) and a CRC-32 of both, so that a cursor this store
// did not hand out, or one of another listing, is refused rather than used
// as a seek position.
func encodeCursor(kind byte, pos []byte) string {
	b := append([]byte{kind}, pos...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(kind byte, c string) ([]byte, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 6 || b[0] != kind {
		return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	return body[1:], nil
}

// Page sizes of the listings (store.ListQuery documents the same bounds).
const (
	defaultLimit = 50
	maxLimit     = 100
)

func pageLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}
