package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/fsm"
)

func counterKey() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrName: strAV(admissionCounter)}
}

// admissionTake takes a create slot: +1, only below maxPending when it is
// positive. The count is kept even without a bound, so that turning a bound
// on later starts from the truth.
func admissionTake(maxPending int) *expr {
	e := newExpr()
	e.update = "ADD " + e.n(AttrCount) + " " + e.num(1)
	if maxPending > 0 {
		e.condition = "attribute_not_exists(" + e.n(AttrCount) + ") OR " + e.n(AttrCount) + " < " + e.num(int64(maxPending))
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

// slotDelta is how a transition changes the admission count.
func slotDelta(from, to fsm.Status) int64 {
	var d int64
	if from.HoldsCreateSlot() {
		d--
	}
	if to.HoldsCreateSlot() {
		d++
	}
	return d
}

// AdmissionCount returns the create admission counter (0 before any create).
func (s *Store) AdmissionCount(ctx context.Context) (int, error) {
	n, _, err := s.readCounter(ctx, "admission count")
	return n, err
}

// readCounter returns the counter and whether its item exists.
func (s *Store) readCounter(ctx context.Context, op string) (int, bool, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.counters),
		Key:            counterKey(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, false, fail(op, s.counters, admissionCounter, err)
	}
	if out.Item == nil {
		return 0, false, nil
	}
	av, ok := out.Item[AttrCount].(*types.AttributeValueMemberN)
	if !ok {
		return 0, true, nil
	}
	n, err := strconv.Atoi(av.Value)
	if err != nil {
		return 0, true, fmt.Errorf("dynamostore: %s %s %q: %s = %q: %w", op, s.counters, admissionCounter, AttrCount, av.Value, err)
	}
	return n, true, nil
}

// RepairAdmission counts the instances in pending and creating (through
// by_status_key) and stores that count, conditionally on the counter not having
// moved while counting; if a create or transition moved it, it counts again.
func (s *Store) RepairAdmission(ctx context.Context) (before, after int, err error) {
	const op = "repair admission"
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, nil); err != nil {
				return 0, 0, err
			}
		}
		old, exists, err := s.readCounter(ctx, op)
		if err != nil {
			return 0, 0, err
		}
		n := 0
		for _, st := range fsm.All {
			if !st.HoldsCreateSlot() {
				continue
			}
			c, err := s.countStatus(ctx, op, st)
			if err != nil {
				return 0, 0, err
			}
			n += c
		}
		e := newExpr()
		e.update = "SET " + e.n(AttrCount) + " = " + e.num(int64(n))
		if exists {
			e.condition = e.n(AttrCount) + " = " + e.num(int64(old))
		} else {
			e.condition = "attribute_not_exists(" + e.n(AttrName) + ")"
		}
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.counters),
			Key:                       counterKey(),
			UpdateExpression:          aws.String(e.update),
			ConditionExpression:       aws.String(e.condition),
			ExpressionAttributeNames:  e.namesOrNil(),
			ExpressionAttributeValues: e.valuesOrNil(),
		})
		switch {
		case err == nil:
			return old, n, nil
		case isConditionFailed(err):
			continue
		default:
			return 0, 0, fail(op, s.counters, admissionCounter, err)
		}
	}
	return 0, 0, errContention(op, s.counters, admissionCounter, s.maxAttempts, fmt.Errorf("counter kept moving"))
}

// countStatus counts the instances in st, one shard of by_status_key after
// the other.
func (s *Store) countStatus(ctx context.Context, op string, st fsm.Status) (int, error) {
	n := 0
	for shard := range IndexShards {
		e := newExpr()
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.instances),
			IndexName:                 aws.String(IndexByStatus),
			KeyConditionExpression:    aws.String(e.n(AttrStatusKey) + " = " + e.s(shardKey(string(st), shard))),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			Select:                    types.SelectCount,
		}
		for {
			out, err := s.client.Query(ctx, in)
			if err != nil {
				return 0, fail(op, s.instances+"/"+IndexByStatus, string(st), err)
			}
			n += int(out.Count)
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return n, nil
}
