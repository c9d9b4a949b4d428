package dynamostore

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/fsm"
)

// DefaultAdmissionShards is how many counter items the admission count is
// spread over (Options.AdmissionShards). One item serialises every create
// and every release of a slot: DynamoDB serves at most 1,000 WCU/s per
// partition, a transactional write of an item costs 2 WCU, so one counter
// item carries at most 500 slot changes per second, and a create changes it
// twice (taken, released). Eight items lift that bound eightfold while an
// admission count still reads a handful of items.
const DefaultAdmissionShards = 8

// AttrAdmissionShard is the instance attribute naming the counter shard the
// instance took its slot on, so that the release decrements that shard. An
// instance without it (written before the count was sharded) holds shard 0.
const AttrAdmissionShard = "admission_shard"

// counterKey is the counters item of one shard. Shard 0 keeps the name of
// the single counter of earlier versions, so a deployed count carries over.
func counterKey(shard int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrName: strAV(counterName(shard))}
}

func counterName(shard int) string {
	if shard == 0 {
		return admissionCounter
	}
	return admissionCounter + "#" + strconv.Itoa(shard)
}

// shardCaps splits maxPending over the shards a create may use: as evenly as
// possible over min(shards, maxPending) of them, so that the caps sum to
// maxPending exactly and the global bound is exact, not approximate. A
// bound below the shard count uses only that many shards, each holding one
// slot. Without a bound (maxPending ≤ 0) every shard is used and every cap
// is 0, meaning unbounded.
func shardCaps(shards, maxPending int) []int {
	if maxPending <= 0 {
		return make([]int, shards)
	}
	used := min(shards, maxPending)
	caps := make([]int, used)
	for i := range caps {
		caps[i] = maxPending / used
		if i < maxPending%used {
			caps[i]++
		}
	}
	return caps
}

// firstShard is the shard a create tries first: a hash of the instance id,
// which spreads concurrent creates over the shards.
func firstShard(id string, used int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(used))
}

// admissionTake takes a create slot on a shard: +1, only below the shard's
// cap when it is positive. The count is kept even without a bound, so that
// turning a bound on later starts from the truth.
func admissionTake(shardCap int) *expr {
	e := newExpr()
	e.update = "ADD " + e.n(AttrCount) + " " + e.num(1)
	if shardCap > 0 {
		e.condition = "attribute_not_exists(" + e.n(AttrCount) + ") OR " + e.n(AttrCount) + " < " + e.num(int64(shardCap))
	}
	return e
}

// admissionAdd changes the count by d without a condition: releasing a slot
// must never make the instance's own transition fail. A count that drifted
// (it cannot through this store, whose every change is transactional) is
// put right by RepairAdmission.
func admissionAdd(d int64) *expr {
	e := newExpr()
	e.update = "ADD " + e.n(AttrCount) + " " + e.num(d)
	return e
}

// slotShard is the shard an instance item holds its slot on. One recorded
// beyond the configured count (the count was lowered since) is counted and
// released on the last shard, so that releases and RepairAdmission agree;
// the reconciler's next repair makes that shard right.
func (s *Store) slotShard(item map[string]types.AttributeValue) int {
	av, ok := item[AttrAdmissionShard].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(av.Value)
	if err != nil || n < 0 {
		return 0
	}
	return min(n, s.admissionShards-1)
}

// AdmissionCount returns the create admission count: the sum of its shards
// (0 before any create). The shards are read one after another, so under
// concurrent creates the sum is not a snapshot; quiescent, it is exact.
func (s *Store) AdmissionCount(ctx context.Context) (int, error) {
	shards, err := s.readShards(ctx, "admission count")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sh := range shards {
		n += sh.count
	}
	return n, nil
}

// shardCount is one counter item as read.
type shardCount struct {
	count  int
	exists bool
}

// readShards reads every counter shard with strongly consistent reads.
func (s *Store) readShards(ctx context.Context, op string) ([]shardCount, error) {
	keys := make([]map[string]types.AttributeValue, s.admissionShards)
	for i := range keys {
		keys[i] = counterKey(i)
	}
	out := make([]shardCount, s.admissionShards)
	req := map[string]types.KeysAndAttributes{s.counters: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for attempt := 1; len(req) > 0; attempt++ {
		if attempt > 1 {
			// Keys DynamoDB left unprocessed (throttling) are asked again
			// after a pause, as its documentation asks.
			if attempt > s.maxAttempts {
				return nil, errContention(op, s.counters, admissionCounter, s.maxAttempts, fmt.Errorf("keys left unprocessed"))
			}
			if err := pause(ctx, attempt-1, nil); err != nil {
				return nil, err
			}
		}
		res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, fail(op, s.counters, admissionCounter, err)
		}
		for _, item := range res.Responses[s.counters] {
			name, _ := item[AttrName].(*types.AttributeValueMemberS)
			shard, ok := shardOfName(name)
			if !ok || shard >= len(out) {
				continue
			}
			n, err := countOf(item)
			if err != nil {
				return nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.counters, counterName(shard), err)
			}
			out[shard] = shardCount{count: n, exists: true}
		}
		req = res.UnprocessedKeys
	}
	return out, nil
}

func shardOfName(name *types.AttributeValueMemberS) (int, bool) {
	switch {
	case name == nil:
		return 0, false
	case name.Value == admissionCounter:
		return 0, true
	}
	rest, ok := strings.CutPrefix(name.Value, admissionCounter+"#")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

func countOf(item map[string]types.AttributeValue) (int, error) {
	av, ok := item[AttrCount].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(av.Value)
	if err != nil {
		return 0, fmt.Errorf("%s = %q: %w", AttrCount, av.Value, err)
	}
	return n, nil
}

// shardsWithRoom returns the shards below their cap, in the order a create
// that found shard from full tries them: from+1, from+2, … around.
func (s *Store) shardsWithRoom(ctx context.Context, op string, caps []int, from int) ([]int, error) {
	shards, err := s.readShards(ctx, op)
	if err != nil {
		return nil, err
	}
	var room []int
	for i := 1; i < len(caps); i++ {
		sh := (from + i) % len(caps)
		if shards[sh].count < caps[sh] {
			room = append(room, sh)
		}
	}
	return room, nil
}

// RepairAdmission counts the instances in pending and creating per shard
// (through by_status_key) and stores those counts, in one transaction that
// conditions every shard it changes on not having moved while counting; if
// a create or transition moved one, it counts again.
func (s *Store) RepairAdmission(ctx context.Context) (before, after int, err error) {
	const op = "repair admission"
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, nil); err != nil {
				return 0, 0, err
			}
		}
		old, err := s.readShards(ctx, op)
		if err != nil {
			return 0, 0, err
		}
		held := make([]int, len(old))
		for _, st := range fsm.All {
			if !st.HoldsCreateSlot() {
				continue
			}
			if err := s.countStatus(ctx, op, st, held); err != nil {
				return 0, 0, err
			}
		}
		before, after = 0, 0
		t := &txn{}
		for sh, o := range old {
			before += o.count
			after += held[sh]
			if o.exists && o.count == held[sh] {
				continue
			}
			e := newExpr()
			e.update = "SET " + e.n(AttrCount) + " = " + e.num(int64(held[sh]))
			if o.exists {
				e.condition = e.n(AttrCount) + " = " + e.num(int64(o.count))
			} else {
				e.condition = "attribute_not_exists(" + e.n(AttrName) + ")"
			}
			t.update(roleCounter, s.counters, counterKey(sh), e)
		}
		if len(t.items) == 0 {
			return before, after, nil
		}
		out, err := s.run(ctx, t, nil)
		switch {
		case err != nil:
			return 0, 0, fail(op, s.counters, admissionCounter, err)
		case out == nil:
			return before, after, nil
		case out.failed[roleCounter] || out.conflict:
			continue
		default:
			return 0, 0, out.unexpected(op, s.counters, admissionCounter)
		}
	}
	return 0, 0, errContention(op, s.counters, admissionCounter, s.maxAttempts, fmt.Errorf("counter kept moving"))
}

// countStatus adds the instances in st to held, by the admission shard each
// holds its slot on (slotShard), one index shard of by_status_key after the
// other.
func (s *Store) countStatus(ctx context.Context, op string, st fsm.Status, held []int) error {
	for shard := range IndexShards {
		e := newExpr()
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.instances),
			IndexName:                 aws.String(IndexByStatus),
			KeyConditionExpression:    aws.String(e.n(AttrStatusKey) + " = " + e.s(shardKey(string(st), shard))),
			ProjectionExpression:      aws.String(e.n(AttrAdmissionShard)),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
		}
		for {
			out, err := s.client.Query(ctx, in)
			if err != nil {
				return fail(op, s.instances+"/"+IndexByStatus, string(st), err)
			}
			for _, item := range out.Items {
				held[s.slotShard(item)]++
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return nil
}
