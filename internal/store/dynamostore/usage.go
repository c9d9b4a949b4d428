package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// A subject's usage bucket is the counters item
// "usage#<kind>#<name>#<bucket>", with one number attribute per counter
// and key, named "<field>|<key>" (store.UsageFields, store.UsageKey): a
// write ADDs its deltas in its own transaction, a query reads its buckets
// with BatchGetItem, at most maxBatchGet a request. Kept in the counters
// table, which every function that writes instances already updates.
const usagePrefix = "usage#"

// maxBatchGet is DynamoDB's limit of keys in one BatchGetItem.
const maxBatchGet = 100

func usageItemName(sub store.QuotaSubject, bucket string) string {
	return usagePrefix + sub.Kind + "#" + sub.Name + "#" + bucket
}

// roleUsage is the role of a usage bucket in a write's transaction.
func roleUsage(u store.UsageAdd) string { return "usage-" + u.Subject.Kind + "-" + u.Bucket }

// usageAdd is the update of u: ADD each non-zero delta. It has no
// condition, so it never cancels a write.
func usageAdd(u store.UsageAdd) *expr {
	e := newExpr()
	var adds []string
	key := u.Key.String()
	for i, f := range u.Delta.Fields() {
		if *f != 0 {
			adds = append(adds, e.n(store.UsageFields[i]+"|"+key)+" "+e.num(*f))
		}
	}
	e.update = "ADD " + strings.Join(adds, ", ")
	return e
}

func (s *Store) applyUsage(x *txWrite, u store.UsageAdd) {
	if u.Delta.IsZero() {
		return
	}
	x.t.update(roleUsage(u), s.counters, docKey(usageItemName(u.Subject, u.Bucket)), usageAdd(u))
}

// Usage answers q from the usage buckets, read with strongly consistent
// BatchGetItem requests (store.UsageBuckets: at most 1 + 367 + 48 items).
func (s *Store) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageItem, error) {
	return store.AnswerUsage(ctx, q, s.now(), s.readUsage)
}

func (s *Store) readUsage(ctx context.Context, sub store.QuotaSubject, buckets []string) (map[string]store.UsageDoc, error) {
	const op = "usage"
	byName := make(map[string]string, len(buckets))
	docs := make(map[string]store.UsageDoc, len(buckets))
	for start := 0; start < len(buckets); start += maxBatchGet {
		chunk := buckets[start:min(start+maxBatchGet, len(buckets))]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, b := range chunk {
			byName[usageItemName(sub, b)] = b
			keys[i] = docKey(usageItemName(sub, b))
		}
		req := map[string]types.KeysAndAttributes{s.counters: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		for attempt := 1; len(req) > 0; attempt++ {
			if attempt > 1 {
				// Keys left unprocessed (throttling) are asked again after a pause.
				if attempt > s.maxAttempts {
					return nil, errContention(op, s.counters, sub.String(), s.maxAttempts, fmt.Errorf("keys left unprocessed"))
				}
				if err := pause(ctx, attempt-1, nil); err != nil {
					return nil, err
				}
			}
			res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fail(op, s.counters, sub.String(), err)
			}
			for _, item := range res.Responses[s.counters] {
				name, _ := item[AttrName].(*types.AttributeValueMemberS)
				if name == nil {
					continue
				}
				doc, err := decodeUsage(item)
				if err != nil {
					return nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.counters, name.Value, err)
				}
				docs[byName[name.Value]] = doc
			}
			req = res.UnprocessedKeys
		}
	}
	return docs, nil
}

// decodeUsage reads a bucket item's "<field>|<key>" attributes.
func decodeUsage(item map[string]types.AttributeValue) (store.UsageDoc, error) {
	doc := store.UsageDoc{}
	for attr, av := range item {
		field, key, ok := strings.Cut(attr, "|")
		n, isNum := av.(*types.AttributeValueMemberN)
		if !ok || !isNum {
			continue
		}
		i := fieldIndex(field)
		if i < 0 {
			continue
		}
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", attr, err)
		}
		c := doc[key]
		*c.Fields()[i] = v
		doc[key] = c
	}
	return doc, nil
}

func fieldIndex(field string) int {
	for i, f := range store.UsageFields {
		if f == field {
			return i
		}
	}
	return -1
}
