package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// maxTxnItems is DynamoDB's limit of actions in one TransactWriteItems.
const maxTxnItems = 100

// Roles name the items of a transaction, so a cancellation reason (reported
// by position) can be mapped back to what failed.
const (
	roleInstance    = "instance"
	roleOutbox      = "outbox"
	roleEvent       = "event"
	roleMarker      = "marker"
	roleCounter     = "counter"
	roleOwnerSlot   = "owner-counter"
	roleIdempotency = "idempotency"
	roleComplete    = "complete-outbox"
	roleDispatch    = "dispatch-outbox"
	roleStamp       = "stamp-event"
	roleTemplate    = "template"
)

// txn collects the items of one TransactWriteItems.
type txn struct {
	items []types.TransactWriteItem
	roles []string
}

func (t *txn) add(role string, item types.TransactWriteItem) {
	t.items = append(t.items, item)
	t.roles = append(t.roles, role)
}

func (t *txn) put(role, table string, item map[string]types.AttributeValue, cond *expr) {
	p := &types.Put{TableName: aws.String(table), Item: item}
	if cond != nil {
		p.ConditionExpression = aws.String(cond.condition)
		p.ExpressionAttributeNames = cond.namesOrNil()
		p.ExpressionAttributeValues = cond.valuesOrNil()
	}
	t.add(role, types.TransactWriteItem{Put: p})
}

func (t *txn) update(role, table string, key map[string]types.AttributeValue, e *expr) {
	t.add(role, types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(table),
		Key:                       key,
		UpdateExpression:          aws.String(e.update),
		ConditionExpression:       e.conditionOrNil(),
		ExpressionAttributeNames:  e.namesOrNil(),
		ExpressionAttributeValues: e.valuesOrNil(),
	}})
}

func (t *txn) check(role, table string, key map[string]types.AttributeValue, cond *expr) {
	t.add(role, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(table),
		Key:                       key,
		ConditionExpression:       aws.String(cond.condition),
		ExpressionAttributeNames:  cond.namesOrNil(),
		ExpressionAttributeValues: cond.valuesOrNil(),
	}})
}

func (t *txn) delete(role, table string, key map[string]types.AttributeValue, cond *expr) {
	d := &types.Delete{TableName: aws.String(table), Key: key}
	if cond != nil {
		d.ConditionExpression = aws.String(cond.condition)
		d.ExpressionAttributeNames = cond.namesOrNil()
		d.ExpressionAttributeValues = cond.valuesOrNil()
	}
	t.add(role, types.TransactWriteItem{Delete: d})
}

// requestToken is a ClientRequestToken for one logical attempt of one call:
// a random nonce drawn once per call plus the attempt number. The SDK's own
// retries of the same attempt (after a timeout or a 5xx, when the commit may
// have happened) reuse it, so DynamoDB answers them with the first outcome
// instead of failing their conditions. It is deliberately not derived from
// domain ids: a second call with the same instance or outbox id within the
// ten-minute idempotency window must see ErrAlreadyExists or ErrConflict,
// not a replayed success.
type requestToken string

func newRequestToken() requestToken {
	var b [15]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return requestToken(hex.EncodeToString(b[:]))
}

func (r requestToken) attempt(n int) *string {
	return aws.String(fmt.Sprintf("%s-%d", r, n)) // ≤ 36 characters for n < 10000
}

// outcome is what a cancelled transaction says about each role.
type outcome struct {
	// failed holds the roles whose condition failed.
	failed map[string]bool
	// conflict: another transaction held one of the items; retry.
	conflict bool
	// other is a reason code that is neither (throttling, validation).
	other string
}

// run executes t. A cancellation is returned as an outcome (with err nil);
// any other error is returned as is.
func (s *Store) run(ctx context.Context, t *txn, token *string) (*outcome, error) {
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      t.items,
		ClientRequestToken: token,
	})
	if err == nil {
		return nil, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var tc *types.TransactionConflictException
		if errors.As(err, &tc) {
			return &outcome{conflict: true}, nil
		}
		return nil, err
	}
	out := &outcome{failed: map[string]bool{}}
	for i, r := range tce.CancellationReasons {
		code := aws.ToString(r.Code)
		switch code {
		case "", "None":
		case "ConditionalCheckFailed":
			if i < len(t.roles) {
				out.failed[t.roles[i]] = true
			}
		case "TransactionConflict":
			out.conflict = true
		default:
			if out.other == "" {
				out.other = code
			}
		}
	}
	if out.other == "" && len(out.failed) == 0 && !out.conflict {
		out.other = aws.ToString(tce.Message)
	}
	return out, nil
}

// unexpected turns a cancellation reason that is neither a condition nor a
// conflict into an error: throttling means unavailable, anything else is a
// bug in the request.
func (o *outcome) unexpected(op, table, key string) error {
	switch o.other {
	case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "TransactionInProgress":
		return fmt.Errorf("dynamostore: %s %s %q: transaction cancelled: %s: %w", op, table, key, o.other, store.ErrUnavailable)
	}
	return fmt.Errorf("dynamostore: %s %s %q: transaction cancelled: %s", op, table, key, o.other)
}
