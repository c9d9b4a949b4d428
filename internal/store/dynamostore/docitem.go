package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Versioned documents (the bind ledger, the webhook subscriptions) are
// counters items keyed by name, holding their JSON in AttrDoc and their
// version in AttrLedgerVersion, written only conditioned on the version
// read. These are the read and the conditioned write of every one.

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
