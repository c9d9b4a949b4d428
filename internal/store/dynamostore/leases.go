package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/store"
)

// A lease slot (store.LeaseStore) is one counters item named
// store.LeaseSlotName, holding its holder and when it runs out (epoch
// milliseconds). Taking one is a put conditioned on the slot being free,
// expired or the holder's own; giving it back a delete conditioned on the
// holder. The counters table is one every function may already read and
// write, so leases need no new table.
const (
	attrLeaseHolder = "holder"
	attrLeaseUntil  = "until_ms"
)

// TakeLease takes one of key's n leases for holder: one conditioned put
// per slot tried, starting at the holder's own (store.LeaseStart).
func (s *Store) TakeLease(ctx context.Context, key, holder string, n int, until, now time.Time) (store.Lease, bool, error) {
	start := store.LeaseStart(holder, n)
	for i := range n {
		slot := (start + i) % n
		name := store.LeaseSlotName(key, slot)
		item := docKey(name)
		item[attrLeaseHolder] = strAV(holder)
		item[attrLeaseUntil] = numAV(until.UnixMilli())
		cond := newExpr()
		cond.condition = "attribute_not_exists(" + cond.n(AttrName) + ") OR " + cond.n(attrLeaseUntil) + " <= " +
			cond.num(now.UnixMilli()) + " OR " + cond.n(attrLeaseHolder) + " = " + cond.s(holder)
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.counters), Item: item, ConditionExpression: cond.conditionOrNil(),
			ExpressionAttributeNames: cond.namesOrNil(), ExpressionAttributeValues: cond.valuesOrNil(),
		})
		switch {
		case err == nil:
			return store.Lease{Key: key, Slot: slot, Holder: holder}, true, nil
		case !isConditionFailed(err):
			return store.Lease{}, false, fail("take lease", s.counters, name, err)
		}
	}
	return store.Lease{}, false, nil
}

// ReleaseLease deletes l's slot when it is still l's holder's.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	name := store.LeaseSlotName(l.Key, l.Slot)
	cond := newExpr()
	cond.condition = cond.n(attrLeaseHolder) + " = " + cond.s(l.Holder)
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.counters), Key: docKey(name), ConditionExpression: cond.conditionOrNil(),
		ExpressionAttributeNames: cond.namesOrNil(), ExpressionAttributeValues: cond.valuesOrNil(),
	})
	if err != nil && !isConditionFailed(err) {
		return fail("release lease", s.counters, name, err)
	}
	return nil
}

var _ store.LeaseStore = (*Store)(nil)
