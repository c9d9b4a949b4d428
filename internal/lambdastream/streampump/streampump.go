// Package streampump plays, in berth-emulate and in tests, the part of the Lambda
// event source mapping between a DynamoDB table's stream and a stream
// handler: it reads the stream (DynamoDB Local's or AWS's) with the
// dynamodbstreams client, converts its records into the aws-lambda-go
// events a stream-triggered Lambda receives, and (Pump) feeds them to a
// handler with the mapping's partial-batch-failure retry rule.
//
// Nothing emulates event source mappings on these machines (see the SQS and
// DynamoDB Local recipes), so end-to-end tests of the request loop use Pump
// between the store and functions/dispatcher's handler.
package streampump

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// NewLocalClient returns a streams client for DynamoDB Local at endpoint
// (the same endpoint as its DynamoDB API).
func NewLocalClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// StreamARN returns the latest stream ARN of a table (DescribeTable).
func StreamARN(ctx context.Context, client *dynamodb.Client, table string) (string, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("streampump: describe table %s: %w", table, err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return "", fmt.Errorf("streampump: table %s has no stream", table)
	}
	return arn, nil
}

// Reader reads a stream's records, shard by shard, from where it started.
// It is not safe for concurrent use.
type Reader struct {
	client *dynamodbstreams.Client
	arn    string
	// iters holds the next iterator of each shard still being read; done
	// holds the shards read to their end; last the sequence number of the
	// last record read from each shard.
	iters map[string]string
	last  map[string]string
	done  map[string]bool
	order []string
	// newShards is where shards found after the start begin.
	newShards types.ShardIteratorType
}

// NewReader starts reading the stream at arn: from its oldest record
// (types.ShardIteratorTypeTrimHorizon) or from now on
// (types.ShardIteratorTypeLatest). Shards that appear later are read from
// their beginning.
func NewReader(ctx context.Context, client *dynamodbstreams.Client, arn string, from types.ShardIteratorType) (*Reader, error) {
	r := &Reader{client: client, arn: arn, iters: map[string]string{}, last: map[string]string{}, done: map[string]bool{}, newShards: types.ShardIteratorTypeTrimHorizon}
	if err := r.discover(ctx, from); err != nil {
		return nil, err
	}
	return r, nil
}

// discover adds the shards not seen yet, starting them at from.
func (r *Reader) discover(ctx context.Context, from types.ShardIteratorType) error {
	var start *string
	for {
		out, err := r.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn), ExclusiveStartShardId: start})
		if err != nil {
			return fmt.Errorf("streampump: describe stream %s: %w", r.arn, err)
		}
		for _, sh := range out.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if _, ok := r.iters[id]; ok || r.done[id] {
				continue
			}
			closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
			if from == types.ShardIteratorTypeLatest && closed {
				r.done[id] = true // nothing new will ever come from it
				continue
			}
			it, err := r.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(r.arn), ShardId: aws.String(id), ShardIteratorType: from,
			})
			if err != nil {
				return fmt.Errorf("streampump: shard iterator of %s: %w", id, err)
			}
			r.iters[id] = aws.ToString(it.ShardIterator)
			r.order = append(r.order, id)
		}
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return nil
		}
	}
}

// Read returns the records available now: one GetRecords on every open
// shard, oldest shard first.
func (r *Reader) Read(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	var out []events.DynamoDBEventRecord
	ended := false
	for _, id := range r.order {
		it, ok := r.iters[id]
		if !ok {
			continue
		}
		res, err := r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
		var trimmed *types.TrimmedDataAccessException
		var expired *types.ExpiredIteratorException
		if errors.As(err, &trimmed) || errors.As(err, &expired) {
			// DynamoDB Local invalidates an iterator taken on a shard while
			// it was empty once records arrive (TrimmedDataAccessException),
			// and iterators expire after 15 minutes: take a new one after
			// the last record read.
			if it, err = r.reiterate(ctx, id); err == nil {
				res, err = r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
			}
		}
		if err != nil {
			return out, fmt.Errorf("streampump: get records of shard %s: %w", id, err)
		}
		for _, rec := range res.Records {
			out = append(out, Record(rec, r.arn))
			if rec.Dynamodb != nil {
				r.last[id] = aws.ToString(rec.Dynamodb.SequenceNumber)
			}
		}
		if res.NextShardIterator == nil {
			delete(r.iters, id)
			r.done[id] = true
			ended = true
		} else {
			r.iters[id] = aws.ToString(res.NextShardIterator)
		}
	}
	if ended || len(r.iters) == 0 {
		// A shard ended: its children (if any) are new shards now.
		if err := r.discover(ctx, r.newShards); err != nil {
			return out, err
		}
	}
	return out, nil
}

// reiterate returns a new iterator of a shard, after its last record read
// (or at its oldest record if none was read yet).
func (r *Reader) reiterate(ctx context.Context, shard string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.arn), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if seq := r.last[shard]; seq != "" {
		in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(seq)
	}
	out, err := r.client.GetShardIterator(ctx, in)
	if err != nil {
		return "", fmt.Errorf("streampump: new shard iterator of %s: %w", shard, err)
	}
	return aws.ToString(out.ShardIterator), nil
}

// Wait reads until at least n records have come or timeout passes, polling
// GetRecords every interval (what an event source mapping does, about four
// times a second per shard; tests poll faster).
func (r *Reader) Wait(ctx context.Context, n int, timeout, interval time.Duration) ([]events.DynamoDBEventRecord, error) {
	deadline := time.Now().Add(timeout)
	var all []events.DynamoDBEventRecord
	for {
		recs, err := r.Read(ctx)
		all = append(all, recs...)
		if err != nil || len(all) >= n {
			return all, err
		}
		if time.Now().Add(interval).After(deadline) {
			return all, fmt.Errorf("streampump: %d of %d records after %s", len(all), n, timeout)
		}
		select {
		case <-ctx.Done():
			return all, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Event wraps records as the event a stream-triggered Lambda receives.
func Event(recs ...events.DynamoDBEventRecord) events.DynamoDBEvent {
	return events.DynamoDBEvent{Records: recs}
}

// Record converts a dynamodbstreams record into the aws-lambda-go record
// Lambda would deliver for it; streamARN becomes its eventSourceARN.
func Record(rec types.Record, streamARN string) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(rec.AwsRegion),
		EventID:        aws.ToString(rec.EventID),
		EventName:      string(rec.EventName),
		EventSource:    aws.ToString(rec.EventSource),
		EventVersion:   aws.ToString(rec.EventVersion),
		EventSourceArn: streamARN,
	}
	if rec.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(rec.UserIdentity.Type), PrincipalID: aws.ToString(rec.UserIdentity.PrincipalId)}
	}
	if sr := rec.Dynamodb; sr != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys:           Attributes(sr.Keys),
			NewImage:       Attributes(sr.NewImage),
			OldImage:       Attributes(sr.OldImage),
			SequenceNumber: aws.ToString(sr.SequenceNumber),
			SizeBytes:      aws.ToInt64(sr.SizeBytes),
			StreamViewType: string(sr.StreamViewType),
		}
		if sr.ApproximateCreationDateTime != nil {
			out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *sr.ApproximateCreationDateTime}
		}
	}
	return out
}

// Attributes converts an image of the streams API into aws-lambda-go's
// attribute values (nil for nil).
func Attributes(in map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if in == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(in))
	for k, v := range in {
		out[k] = Attribute(v)
	}
	return out
}

// Attribute converts one attribute value.
func Attribute(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, 0, len(v.Value))
		for _, e := range v.Value {
			l = append(l, Attribute(e))
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(Attributes(v.Value))
	}
	panic(fmt.Sprintf("streampump: unknown attribute value type %T", v))
}

// Handler is a stream-triggered Lambda's handler (lambdastream.Handler.Handle).
type Handler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// Pump feeds a stream to a handler the way an event source mapping with
// ReportBatchItemFailures does: batches of records in stream order; after a
// partial failure it retries from the first failed record (so the records
// after it come again); after an error, or a failure naming no record of
// the batch, it retries the whole batch; after MaxRetries retries of the
// same first record it gives that record up (OnGiveUp) and goes on.
type Pump struct {
	Reader  *Reader
	Handler Handler
	// BatchSize is the most records per invocation; 0 means 100.
	BatchSize int
	// PollInterval is the pause after a GetRecords pass that found nothing;
	// 0 means 25 ms.
	PollInterval time.Duration
	// MaxRetries of one record before it is given up; 0 means 3.
	MaxRetries int
	// RetryBackoff is the pause before a retry; 0 means 50 ms.
	RetryBackoff time.Duration
	// OnGiveUp, if set, is told of each record given up.
	OnGiveUp func(events.DynamoDBEventRecord)

	mu          sync.Mutex
	invocations int
}

// Invocations returns how many times the handler was called.
func (p *Pump) Invocations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.invocations
}

// Run pumps until ctx ends and returns its error, or a stream read error.
func (p *Pump) Run(ctx context.Context) error {
	batchSize := p.BatchSize
	if batchSize <= 0 {
		batchSize = 100
	}
	poll := p.PollInterval
	if poll <= 0 {
		poll = 25 * time.Millisecond
	}
	maxRetries := p.MaxRetries
	if maxRetries <= 0 {
		maxRetries = 3
	}
	backoff := p.RetryBackoff
	if backoff <= 0 {
		backoff = 50 * time.Millisecond
	}
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	var buf []events.DynamoDBEventRecord
	retries := 0
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(buf) == 0 {
			recs, err := p.Reader.Read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			buf = recs
			if len(buf) == 0 {
				if err := sleep(poll); err != nil {
					return err
				}
				continue
			}
		}
		n := min(len(buf), batchSize)
		batch := buf[:n]
		p.mu.Lock()
		p.invocations++
		p.mu.Unlock()
		resp, err := p.Handler(ctx, Event(batch...))
		from := n // index of the first record to retry; n: none
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			from = 0
		} else {
			for _, f := range resp.BatchItemFailures {
				i := indexOf(batch, f.ItemIdentifier)
				if i < 0 {
					i = 0 // an unknown identifier fails the whole batch
				}
				from = min(from, i)
			}
		}
		if from == n {
			buf = buf[n:]
			retries = 0
			continue
		}
		buf = buf[from:]
		if from > 0 {
			retries = 0
		}
		retries++
		if retries > maxRetries {
			if p.OnGiveUp != nil {
				p.OnGiveUp(buf[0])
			}
			buf = buf[1:]
			retries = 0
			continue
		}
		if err := sleep(backoff); err != nil {
			return err
		}
	}
}

func indexOf(recs []events.DynamoDBEventRecord, seq string) int {
	for i, r := range recs {
		if r.Change.SequenceNumber == seq && seq != "" {
			return i
		}
	}
	return -1
}
