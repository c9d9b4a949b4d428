package emulate

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/lambdastream/streampump"
	"github.com/berth-io/berth/internal/samtemplate"
)

// Stream polling: how often an idle shard is read (an event source
// mapping polls each shard about four times a second), and the backoff
// between retries of a failed batch.
const (
	streamPollInterval = 100 * time.Millisecond
	streamRetryFirst   = 100 * time.Millisecond
	streamRetryMax     = 2 * time.Second
)

// streamPoller plays a DynamoDB stream → function event source mapping:
// GetRecords in shard order, the FilterCriteria, batches of BatchSize
// within MaximumBatchingWindowInSeconds, partial batch failures
// (ReportBatchItemFailures: the batch is retried from the lowest failed
// record), BisectBatchOnFunctionError (a failing batch is split in two and
// each half retried; splitting does not use up a retry, so a poison record
// ends alone), MaximumRetryAttempts and MaximumRecordAgeInSeconds, and the
// on-failure destination (an SQS queue) for what is given up.
type streamPoller struct {
	m *samtemplate.StreamMapping
	// call invokes the mapping's function with one event, holding one of
	// its slots.
	call      func(ctx context.Context, payload []byte) Invocation
	filter    filter
	streams   *dynamodbstreams.Client
	streamARN string
	sqs       *sqs.Client
	onFailure *queueInfo // nil: records given up are only logged
	fnARN     string
	log       *slog.Logger
	// onGiveUp, if set, is told of every batch given up (tests).
	onGiveUp func(batch []events.DynamoDBEventRecord, condition string)
}

func (p *streamPoller) run(ctx context.Context) {
	from := streamtypes.ShardIteratorTypeLatest
	if p.m.Settings.StartingPosition == string(streamtypes.ShardIteratorTypeTrimHorizon) {
		from = streamtypes.ShardIteratorTypeTrimHorizon
	}
	var r *streampump.Reader
	for r == nil {
		var err error
		if r, err = streampump.NewReader(ctx, p.streams, p.streamARN, from); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Error("stream mapping: cannot read the stream; retrying", "mapping", p.m.Name, "error", err)
			sleep(ctx, time.Second)
		}
	}
	var buf []events.DynamoDBEventRecord
	var firstAt time.Time
	for ctx.Err() == nil {
		recs, err := r.Read(ctx)
		if err != nil && ctx.Err() == nil {
			p.log.Error("stream mapping: GetRecords failed; retrying", "mapping", p.m.Name, "error", err)
			sleep(ctx, time.Second)
		}
		for _, rec := range recs {
			if !p.filter.match(jsonValue(rec)) {
				continue // filtered out: never delivered, as Lambda does
			}
			if len(buf) == 0 {
				firstAt = time.Now()
			}
			buf = append(buf, rec)
		}
		size := p.m.Settings.BatchSize
		if len(buf) == 0 || (len(buf) < size && time.Since(firstAt) < p.m.Settings.BatchWindow) {
			sleep(ctx, streamPollInterval)
			continue
		}
		for len(buf) > 0 && ctx.Err() == nil {
			n := min(len(buf), size)
			p.process(ctx, buf[:n], 0)
			buf = buf[n:]
		}
	}
}

// process delivers one batch until it succeeds or is given up.
func (p *streamPoller) process(ctx context.Context, batch []events.DynamoDBEventRecord, retries int) {
	st := p.m.Settings
	backoff := streamRetryFirst
	for ctx.Err() == nil {
		if st.MaxRecordAge > 0 && time.Since(batch[0].Change.ApproximateCreationDateTime.Time) > st.MaxRecordAge {
			p.giveUp(ctx, batch, "RecordAgeExceeded", retries)
			return
		}
		from, functionError := p.invoke(ctx, batch)
		if ctx.Err() != nil {
			return
		}
		if from == len(batch) {
			return
		}
		batch = batch[from:]
		if st.Bisect && len(batch) > 1 {
			half := len(batch) / 2
			p.log.Info("stream mapping: bisecting a failed batch", "mapping", p.m.Name, "records", len(batch),
				"function_error", functionError)
			p.process(ctx, batch[:half], retries)
			p.process(ctx, batch[half:], retries)
			return
		}
		retries++
		if st.MaxRetries >= 0 && retries > st.MaxRetries {
			p.giveUp(ctx, batch, "RetryAttemptsExhausted", retries)
			return
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, streamRetryMax)
	}
}

// invoke runs the function on batch and returns the index of the first
// record to retry (len(batch): none) and whether the function failed as a
// whole.
func (p *streamPoller) invoke(ctx context.Context, batch []events.DynamoDBEventRecord) (int, bool) {
	payload, err := json.Marshal(events.DynamoDBEvent{Records: batch})
	if err != nil {
		p.log.Error("stream mapping: encoding the event", "error", err)
		return 0, true
	}
	inv := p.call(ctx, payload)
	if inv.Result != ResultOK {
		return 0, true
	}
	if !p.m.Settings.ReportBatchItemFailures {
		return len(batch), false
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(inv.Payload, &resp); err != nil {
		return len(batch), false // not a batch response: a success
	}
	from := len(batch)
	for _, f := range resp.BatchItemFailures {
		i := -1
		for j, r := range batch {
			if r.Change.SequenceNumber == f.ItemIdentifier {
				i = j
				break
			}
		}
		if i < 0 { // an identifier not in the batch fails all of it
			i = 0
		}
		from = min(from, i)
	}
	return from, false
}

// onFailureRecord is the invocation record Lambda sends to a stream
// mapping's on-failure destination.
type onFailureRecord struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	ResponseContext struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError"`
	} `json:"responseContext"`
	Version            string `json:"version"`
	Timestamp          string `json:"timestamp"`
	DDBStreamBatchInfo struct {
		StartSequenceNumber             string `json:"startSequenceNumber"`
		EndSequenceNumber               string `json:"endSequenceNumber"`
		ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
		ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
		BatchSize                       int    `json:"batchSize"`
		StreamARN                       string `json:"streamArn"`
	} `json:"DDBStreamBatchInfo"`
}

// giveUp sends the batch's description to the on-failure destination.
func (p *streamPoller) giveUp(ctx context.Context, batch []events.DynamoDBEventRecord, condition string, invokes int) {
	first, last := batch[0], batch[len(batch)-1]
	if p.onGiveUp != nil {
		p.onGiveUp(batch, condition)
	}
	p.log.Warn("stream mapping: records given up", "mapping", p.m.Name, "condition", condition, "records", len(batch),
		"first_sequence_number", first.Change.SequenceNumber, "last_sequence_number", last.Change.SequenceNumber)
	if p.onFailure == nil {
		return
	}
	var rec onFailureRecord
	rec.RequestContext.RequestID = newUUID()
	rec.RequestContext.FunctionARN = p.fnARN
	rec.RequestContext.Condition = condition
	rec.RequestContext.ApproximateInvokeCount = invokes
	rec.ResponseContext.StatusCode = 200
	rec.ResponseContext.ExecutedVersion = "$LATEST"
	rec.ResponseContext.FunctionError = "Unhandled"
	rec.Version = "1.0"
	rec.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
	info := &rec.DDBStreamBatchInfo
	info.StartSequenceNumber, info.EndSequenceNumber = first.Change.SequenceNumber, last.Change.SequenceNumber
	info.ApproximateArrivalOfFirstRecord = first.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339)
	info.ApproximateArrivalOfLastRecord = last.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339)
	info.BatchSize = len(batch)
	info.StreamARN = p.streamARN
	body, _ := json.Marshal(rec)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		_, err := p.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(p.onFailure.URL), MessageBody: aws.String(string(body))})
		if err == nil {
			return
		}
		p.log.Error("stream mapping: sending to the on-failure destination failed; retrying", "mapping", p.m.Name, "error", err)
		sleep(ctx, time.Duration(min(attempt+1, 10))*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
