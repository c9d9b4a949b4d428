package dynamostore

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
)

// BackfillIndexKeys gives the items a deployment wrote before an index key
// existed the keys the store now lists by: every instance without its
// status_key gets it, every active instance without its node_bucket gets
// it, and every pending outbox item whose undispatched key is still the
// bare "pending" gets its shard's. Until then such an instance is missing
// from ListActive and status listings (or from ListActiveInBucket), and
// such an item from ListUndispatched. Each item is updated on the
// condition that what it was computed from is unchanged, so it is safe
// while berth runs (the store writes the new keys on every write anyway)
// and safe to repeat. It scans both tables once and returns how many
// items it updated.
func (s *Store) BackfillIndexKeys(ctx context.Context) (instances, outbox int, err error) {
	const op = "backfill index keys"
	err = s.scanAll(ctx, op, s.instances, func(item map[string]types.AttributeValue) error {
		e, ok := instanceBackfill(item)
		if !ok {
			return nil
		}
		ok, err := s.backfillOne(ctx, op, s.instances, instanceKey(sortValue(item, AttrID)), e)
		if ok {
			instances++
		}
		return err
	})
	if err != nil {
		return instances, 0, err
	}
	legacy := string(container.OutboxPending)
	err = s.scanAll(ctx, op, s.outbox, func(item map[string]types.AttributeValue) error {
		id := sortValue(item, AttrID)
		if id == "" || sortValue(item, AttrUndispatched) != legacy {
			return nil
		}
		e := newExpr()
		e.update = "SET " + e.n(AttrUndispatched) + " = " + e.s(undispatchedKey(id))
		e.condition = e.n(AttrUndispatched) + " = " + e.s(legacy)
		ok, err := s.backfillOne(ctx, op, s.outbox, outboxKey(id), e)
		if ok {
			outbox++
		}
		return err
	})
	return instances, outbox, err
}

// scanAll calls fn on every item of table.
func (s *Store) scanAll(ctx context.Context, op, table string, fn func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	for {
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return fail(op, table, "", err)
		}
		for _, item := range out.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// backfillOne applies e to one item; a failed condition means a write of
// the current code got there first (or the item is gone), so nothing is
// left to do.
func (s *Store) backfillOne(ctx context.Context, op, table string, key map[string]types.AttributeValue, e *expr) (bool, error) {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key,
		UpdateExpression:          aws.String(e.update),
		ConditionExpression:       aws.String(e.condition),
		ExpressionAttributeNames:  e.namesOrNil(),
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	switch {
	case err == nil:
		return true, nil
	case isConditionFailed(err):
		return false, nil
	default:
		return false, fail(op, table, "", err)
	}
}

// instanceBackfill is the update that gives an instance item the index
// keys it lacks (status_key; node_bucket while active), conditioned on
// the item being still as read; false when it lacks none.
func instanceBackfill(item map[string]types.AttributeValue) (*expr, bool) {
	id, st := sortValue(item, AttrID), sortValue(item, AttrStatus)
	if id == "" || st == "" {
		return nil, false
	}
	e := newExpr()
	var sets, conds []string
	if sortValue(item, AttrStatusKey) == "" {
		sets = append(sets, e.n(AttrStatusKey)+" = "+e.s(shardKey(st, shardOf(id))))
		conds = append(conds, "attribute_not_exists("+e.n(AttrStatusKey)+")")
	}
	if _, has := item[AttrNodeBucket]; !has {
		// Decoded only for what the bucket is computed from (status, runtime
		// kind, node), all of which the version condition pins.
		if in, err := unmarshalInstance(item); err == nil {
			if b := nodeBucketKey(in); b != "" {
				sets = append(sets, e.n(AttrNodeBucket)+" = "+e.s(b))
				conds = append(conds, "attribute_not_exists("+e.n(AttrNodeBucket)+")",
					e.n("version")+" = "+e.num(in.Version))
			}
		}
	}
	if len(sets) == 0 {
		return nil, false
	}
	e.update = "SET " + strings.Join(sets, ", ")
	e.condition = and(append([]string{e.n(AttrStatus) + " = " + e.s(st)}, conds...)...)
	return e, true
}
