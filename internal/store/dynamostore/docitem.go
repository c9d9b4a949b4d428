package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Versioned documents (the bind ledger, the webhook subscriptions, the
// quota overrides) are counters items keyed by name, holding their JSON in
// AttrDoc and their version in AttrLedgerVersion, written only conditioned
// on the version read. These are the read and the conditioned write of
// every one, and changeDoc the read-change-write of the last two.

func docKey(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrName: strAV(name)}
}

// getDoc reads counters item name's document into v, leaving v as it is
// when there is no such item (a document never written: version 0).
func (s *Store) getDoc(ctx context.Context, op, name string, v any) error {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.counters), Key: docKey(name), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fail(op, s.counters, name, err)
	}
	if out.Item == nil {
		return nil
	}
	doc, ok := out.Item[AttrDoc].(*types.AttributeValueMemberS)
	if !ok {
		return fmt.Errorf("dynamostore: %s %s: no document", op, s.counters)
	}
	if err := json.Unmarshal([]byte(doc.Value), v); err != nil {
		return fmt.Errorf("dynamostore: %s %s: %w", op, s.counters, err)
	}
	return nil
}

// docPut is the item storing v as counters item name at version, and its
// condition: the stored version is version-1 (no item when version is 1).
func docPut(name string, v any, version int64) (map[string]types.AttributeValue, *expr, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s: %w", name, err)
	}
	item := docKey(name)
	item[AttrDoc] = strAV(string(doc))
	item[AttrLedgerVersion] = numAV(version)
	if version <= 1 {
		return item, notExists(AttrName), nil
	}
	cond := newExpr()
	cond.condition = cond.n(AttrLedgerVersion) + " = " + cond.num(version-1)
	return item, cond, nil
}

// changeDoc applies change to the document name as read (a zero one when
// none is stored) and writes the result, its version (the field version
// points at) one more, conditioned on the version read: a lost race reads
// again, at most s.maxAttempts times. what names the document in the
// error of a lost race.
func changeDoc[T any](ctx context.Context, s *Store, op, name, what string, version func(*T) *int64, change func(*T) error) error {
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		var doc T
		if err := s.getDoc(ctx, op, name, &doc); err != nil {
			return err
		}
		expect := *version(&doc)
		if err := change(&doc); err != nil {
			return fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		*version(&doc) = expect + 1
		item, cond, err := docPut(name, doc, expect+1)
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.counters), Item: item, ConditionExpression: cond.conditionOrNil(),
			ExpressionAttributeNames: cond.namesOrNil(), ExpressionAttributeValues: cond.valuesOrNil(),
		})
		switch {
		case err == nil:
			return nil
		case !isConditionFailed(err):
			return fail(op, s.counters, name, err)
		}
		if err := pause(ctx, attempt, errors.New(what+" changed at version "+strconv.FormatInt(expect, 10))); err != nil {
			return err
		}
	}
	return errContention(op, s.counters, name, s.maxAttempts, errors.New("conditional check failed"))
}
