// Package fleetshard splits a fleet of runtime nodes (Docker hosts,
// Kubernetes clusters) into shards, so that the background loops that
// visit every node (the reconciler, the watcher) can run as one invocation
// per shard on AWS: a pass then costs the nodes of its shard, and a slow or
// dead node delays its shard only.
//
// A node belongs to a bucket, a stable hash of its kind and name among
// Buckets; shard i of n owns the buckets b with b mod n = i. The bucket is
// part of the stored layout (an active instance is listed by its node's
// bucket), so it never depends on the shard count: when the count changes,
// whole buckets move between shards, and every bucket has exactly one
// owner under any one count.
package fleetshard

import (
	"fmt"
	"hash/fnv"
)

// Buckets is how many buckets nodes are hashed into, and so the most
// shards a fleet can have. It is part of the stored layout: changing it
// re-keys every active instance.
const Buckets = 1024

// DefaultNodesPerShard is how many nodes one shard is sized for when the
// shard count is not configured (Count).
const DefaultNodesPerShard = 100

// BucketOf is the bucket of the node named node of a runtime kind
// ("docker", "kubernetes"). An instance not placed yet (node "") has the
// bucket of its kind's empty name, so one shard holds all of them.
func BucketOf(kind, node string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(kind + "/" + node)) // a hash.Hash never fails to write
	return int(h.Sum32() % Buckets)
}

// Count is the shard count for a fleet of nodes: configured when it is
// positive (at most Buckets), else one shard per DefaultNodesPerShard
// nodes, at least one.
func Count(configured, nodes int) int {
	if configured > 0 {
		return min(configured, Buckets)
	}
	return max(1, (nodes+DefaultNodesPerShard-1)/DefaultNodesPerShard)
}

// Shard is one shard of a fleet split Count ways. The zero Shard, like
// any with Count ≤ 1, is the whole fleet.
type Shard struct {
	Index int `json:"shard"`
	Count int `json:"shards"`
}

// Whole is the shard that owns every bucket (`berth serve`'s single loop).
func Whole() Shard { return Shard{Index: 0, Count: 1} }

// All lists the n shards of a fleet split n ways.
func All(n int) []Shard {
	out := make([]Shard, max(n, 1))
	for i := range out {
		out[i] = Shard{Index: i, Count: max(n, 1)}
	}
	return out
}

// IsWhole says whether s owns every bucket.
func (s Shard) IsWhole() bool { return s.Count <= 1 }

// Leads says whether s runs the steps that are the fleet's as a whole and
// not any node's (the outbox sweep, retention, the admission counter's
// repair, the lifetimes' timers): shard 0 does, so each runs once per
// period.
func (s Shard) Leads() bool { return s.IsWhole() || s.Index == 0 }

// OwnsBucket says whether bucket b is s's.
func (s Shard) OwnsBucket(b int) bool { return s.IsWhole() || b%s.Count == s.Index }

// OwnsNode says whether the node named node of kind is s's.
func (s Shard) OwnsNode(kind, node string) bool { return s.OwnsBucket(BucketOf(kind, node)) }

// Buckets lists the buckets s owns, in order.
func (s Shard) Buckets() []int {
	var out []int
	for b := range Buckets {
		if s.OwnsBucket(b) {
			out = append(out, b)
		}
	}
	return out
}

// Validate refuses a shard that is not one of its Count.
func (s Shard) Validate() error {
	if s.Count < 0 || s.Count > Buckets {
		return fmt.Errorf("fleetshard: shard count %d is outside 0..%d", s.Count, Buckets)
	}
	if s.Index < 0 || (s.Count > 0 && s.Index >= s.Count) || (s.Count == 0 && s.Index != 0) {
		return fmt.Errorf("fleetshard: shard %d is not one of %d", s.Index, s.Count)
	}
	return nil
}

// String is "i/n" ("0/1" for the whole fleet).
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1)) }
