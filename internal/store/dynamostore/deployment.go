package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// deploymentName is the counters item holding the deployment record (its
// JSON in AttrDoc, its version in AttrLedgerVersion, as the bind ledger).
const deploymentName = "deployment"

func deploymentKey() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrName: strAV(deploymentName)}
}

// GetDeployment returns the stored deployment record, or a zero one.
func (s *Store) GetDeployment(ctx context.Context) (store.Deployment, error) {
	const op = "get deployment"
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.counters), Key: deploymentKey(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.Deployment{}, fail(op, s.counters, deploymentName, err)
	}
	var d store.Deployment
	if out.Item == nil {
		return d, nil
	}
	doc, ok := out.Item[AttrDoc].(*types.AttributeValueMemberS)
	if !ok {
		return d, fmt.Errorf("dynamostore: %s %s: no document", op, s.counters)
	}
	if err := json.Unmarshal([]byte(doc.Value), &d); err != nil {
		return d, fmt.Errorf("dynamostore: %s %s: %w", op, s.counters, err)
	}
	return d, nil
}

// PutDeployment replaces the record if it is still at d.Version: one
// conditional put.
func (s *Store) PutDeployment(ctx context.Context, d store.Deployment) (store.Deployment, error) {
	const op = "put deployment"
	expect := d.Version
	d.Version++
	d.UpdatedAt = s.now().UTC()
	doc, err := json.Marshal(d)
	if err != nil {
		return store.Deployment{}, fmt.Errorf("dynamostore: %s: encode: %w", op, err)
	}
	item := deploymentKey()
	item[AttrDoc] = strAV(string(doc))
	item[AttrLedgerVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Version, 10)}
	cond := notExists(AttrName)
	if expect > 0 {
		cond = newExpr()
		cond.condition = cond.n(AttrLedgerVersion) + " = " + cond.num(expect)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.counters), Item: item,
		ConditionExpression:       aws.String(cond.condition),
		ExpressionAttributeNames:  cond.namesOrNil(),
		ExpressionAttributeValues: cond.valuesOrNil(),
	})
	switch {
	case isConditionFailed(err):
		return store.Deployment{}, failWith(store.ErrDeploymentChanged, op, s.counters, deploymentName)
	case err != nil:
		return store.Deployment{}, fail(op, s.counters, deploymentName, err)
	}
	return d, nil
}
