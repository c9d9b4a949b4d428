package dynamostore

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// IndexShards is how many partition key values each hot index key is split
// into: by_status_key holds "<status>#<n>" and undispatched "pending#<n>"
// for n in [0, IndexShards). A GSI partition takes about 1,000 writes per
// second and a throttled GSI throttles the writes to its table, so one key
// value per status would cap the whole system near that rate; with the
// writes spread over IndexShards values the cap is IndexShards times
// higher. Listings read every shard, so each costs IndexShards queries at
// least: 16 keeps that small while lifting the cap to about 16,000 writes
// per second per status. It is part of the stored layout: changing it
// re-keys every item (BackfillIndexKeys).
const IndexShards = 16

// shardOf is the index shard of an item: a hash of its id, so an item keeps
// its shard through every write (a listing's cursor never sees it move
// between shards) and ids spread evenly whatever their time prefix.
func shardOf(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id)) // a hash.Hash never fails to write
	return int(h.Sum32() % IndexShards)
}

// shardKey is the index partition key of value in shard n.
func shardKey(value string, n int) string { return value + "#" + strconv.Itoa(n) }

// statusKey is an instance's by_status_key partition key.
func statusKey(st fsm.Status, id string) string { return shardKey(string(st), shardOf(id)) }

// nodeBucketKey is an instance's by_node_bucket partition key: its node
// bucket in decimal while it is active, "" (no attribute: not in the
// index) once it has ended. Set with the status key, by the one write
// every instance change goes through (marshalInstance).
func nodeBucketKey(in container.Instance) string {
	b, listed := store.NodeBucket(in)
	if !listed {
		return ""
	}
	return strconv.Itoa(b)
}

// undispatchedKey is a pending outbox item's undispatched partition key.
func undispatchedKey(id string) string { return shardKey(string(container.OutboxPending), shardOf(id)) }

// deadlineShard is the by_deadline partition key of an instance.
func deadlineShard(id string) string { return shardKey("deadline", shardOf(id)) }

// deadlineKey is the by_deadline sort key: soonest first, ties broken by
// id so that a cursor is a unique position.
func deadlineKey(at time.Time, id string) string { return fmtTime(at) + "#" + id }
