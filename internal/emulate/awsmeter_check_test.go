package emulate_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/testenv"
)

// TestAWSMeter checks the meter against the real emulators: it counts each
// request by action, reads the units DynamoDB Local reports (a GSI write
// billed as a write of its own, an eventually consistent read at half a
// unit, at least that when it finds nothing), prices transactions from
// their items (two units per KB, index entries included), bills a failed
// conditional write as AWS does, and tells empty receives apart.
func TestAWSMeter(t *testing.T) {
	t.Parallel()
	ddbURL, sqsURL := testenv.DynamoDBEndpoint(t), testenv.SQSEndpoint(t)
	prefix := "meter" + container.NewID()[14:] + "-"
	m := newAWSMeter(t, ddbURL, sqsURL, prefix)
	ctx := t.Context()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("berth", "test", "")}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(m.ddbURL)
		o.DisableValidateResponseChecksum = true
	})
	q := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(m.sqsURL) })

	table := prefix + "items"
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{IndexName: aws.String("by_g"),
			KeySchema:  []ddbtypes.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: ddbtypes.KeyTypeHash}},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ddb.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })
	item := func(pk, g string) map[string]ddbtypes.AttributeValue {
		it := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}}
		if g != "" {
			it["g"] = &ddbtypes.AttributeValueMemberS{Value: g}
		}
		return it
	}
	queue, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "q")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: queue.QueueUrl}) })
	before := m.snapshot()

	steps := []struct {
		name string
		call func() error
	}{
		{"put, not indexed", func() error {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "")})
			return err
		}},
		{"put, indexed", func() error {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("b", "x")})
			return err
		}},
		{"transaction", func() error {
			_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("c", "")}}}})
			return err
		}},
		{"transaction, an indexed update", func() error {
			_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Update: &ddbtypes.Update{TableName: aws.String(table), Key: item("b", ""), UpdateExpression: aws.String("SET v = :v"),
					ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("v", 1500)}}}}}})
			return err
		}},
		{"get", func() error {
			_, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item("a", "")})
			return err
		}},
		{"get, missing", func() error {
			_, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item("nothing", "")})
			return err
		}},
		{"query, one item", func() error {
			_, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("by_g"),
				KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":g": &ddbtypes.AttributeValueMemberS{Value: "x"}}})
			return err
		}},
		{"query, empty", func() error {
			_, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("by_g"),
				KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":g": &ddbtypes.AttributeValueMemberS{Value: "none"}}})
			return err
		}},
		{"conditional put that fails", func() error {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", ""),
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			var ccf *ddbtypes.ConditionalCheckFailedException
			if !errors.As(err, &ccf) {
				return errors.New("the condition did not fail")
			}
			return nil
		}},
		{"send", func() error {
			_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue.QueueUrl, MessageBody: aws.String("m")})
			return err
		}},
		{"receive", func() error {
			out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, WaitTimeSeconds: 1})
			if err == nil && len(out.Messages) != 1 {
				return errors.New("the message did not come")
			}
			return err
		}},
		{"empty receive", func() error {
			_, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, WaitTimeSeconds: 0, VisibilityTimeout: 30})
			return err
		}},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	got := m.snapshot().sub(before)
	want := meterCounts{
		Requests: map[string]float64{"dynamodb.PutItem": 3, "dynamodb.TransactWriteItems": 2, "dynamodb.GetItem": 2, "dynamodb.Query": 2,
			"sqs.SendMessage": 1, "sqs.ReceiveMessage": 2},
		Errors: map[string]float64{"dynamodb.PutItem.ConditionalCheckFailedException": 1},
		// A transaction's write is two units per KB: the update makes b
		// 1.5 KB, in the table and in the index (projection ALL).
		// The failed conditional put is billed a unit too.
		Units: map[string]float64{"write items": 1 + 1 + 2 + 2*2 + 1, "write items/by_g": 1 + 2*2,
			// A read that finds nothing is billed half a unit.
			"read items": 0.5 + 0.5, "read items/by_g": 0.5 + 0.5},
		WriteUnits: 1 + 2 + 2 + 8 + 1, ReadUnits: 2, EmptyReceives: 1,
		// b: pk "b", g "x", v 1500 bytes.
		QueryBytes: 2 + 1 + 1 + 1 + 1 + 1500,
	}
	for _, c := range []struct {
		what      string
		got, want map[string]float64
	}{{"requests", got.Requests, want.Requests}, {"errors", got.Errors, want.Errors}, {"units", got.Units, want.Units}} {
		if !maps.Equal(c.got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.what, c.got, c.want)
		}
	}
	if got.WriteUnits != want.WriteUnits || got.ReadUnits != want.ReadUnits || got.EmptyReceives != want.EmptyReceives || got.QueryBytes != want.QueryBytes {
		t.Errorf("write %v read %v empty %v query bytes %v, want %v %v %v %v", got.WriteUnits, got.ReadUnits, got.EmptyReceives, got.QueryBytes,
			want.WriteUnits, want.ReadUnits, want.EmptyReceives, want.QueryBytes)
	}
}
