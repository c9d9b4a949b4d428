package dynamostore

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/store"
)

// slotChoice is the shard a create takes its slot on (admission.go): first
// the one the id hashes to, then, if that one is full, those a read finds
// below their cap.
type slotChoice struct {
	caps     []int
	limit    int
	shard    int
	room     []int // shards left to try, once shard was found full
	searched bool
}

// applyAdmission takes a slot on the chosen shard, recorded on the
// instance, or releases the one the instance holds on the shard it
// recorded.
func (s *Store) applyAdmission(x *txWrite, a store.Admission, c *commitState) {
	if !a.Take {
		x.t.update(roleCounter, s.counters, counterKey(s.slotShard(x.prior)), admissionAdd(-1))
		if _, ok := x.prior[AttrOwnerSlot]; ok {
			x.t.update(roleOwnerSlot, s.counters, docKey(ownerCounterName(a.Owner)), admissionAdd(-1))
		}
		return
	}
	if a.OwnerLimit > 0 {
		x.instAV[AttrOwnerSlot] = numAV(1)
		x.t.update(roleOwnerSlot, s.counters, docKey(ownerCounterName(a.Owner)), admissionTake(a.OwnerLimit))
	}
	if c.slot == nil {
		caps := shardCaps(s.admissionShards, a.Limit)
		c.slot = &slotChoice{caps: caps, limit: a.Limit, shard: firstShard(x.w.Instance.ID, len(caps))}
	}
	sh := c.slot.shard
	x.instAV[AttrAdmissionShard] = numAV(int64(sh))
	x.t.update(roleCounter, s.counters, counterKey(sh), admissionTake(c.slot.caps[sh]))
}

// otherShard moves a create whose shard was full to the next one with
// room; true: try again at once. Every shard this create tried was full
// when it tried it, and the caps sum to the limit: refusing once none is
// left never lets more creates in than the limit.
func (s *Store) otherShard(ctx context.Context, op, id string, c *commitState) (bool, error) {
	sl := c.slot
	if !sl.searched && len(sl.caps) > 1 {
		sl.searched = true
		room, err := s.shardsWithRoom(ctx, op, sl.caps, sl.shard)
		if err != nil {
			return false, err
		}
		sl.room = room
	}
	if len(sl.room) == 0 {
		return false, fmt.Errorf("dynamostore: %s %s %q: %d unfinished creates: %w",
			op, s.instances, id, sl.limit, store.ErrQueueFull)
	}
	sl.shard, sl.room = sl.room[0], sl.room[1:]
	return true, nil
}

// AttrOwnerSlot marks an instance that took a slot of its owner's share
// (store.Admission.OwnerLimit) on its owner's counter, so that its release
// gives that slot back; an instance created without a share of its own
// has none, and its release leaves the owner's counter alone.
const AttrOwnerSlot = "owner_slot"

// ownerCounterName is the counters item counting owner's creates in
// flight that took a slot of its share. One item per owner: the share
// bounds one owner's rate anyway, and the total's shards keep every other
// owner's creates off it.
func ownerCounterName(owner string) string { return admissionCounter + "-owner#" + owner }
