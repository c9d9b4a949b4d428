package emulate

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/samtemplate"
)

// queueLongPoll is each ReceiveMessage's wait: long enough not to spin,
// short enough that a stop is prompt.
const queueLongPoll = 2 // seconds

// queuePoller plays an SQS queue → function event source mapping: as many
// pollers as ScalingConfig.MaximumConcurrency (else the function's
// concurrency) allows, each taking one of the function's slots once it has
// received a batch, for the invocation (as Lambda's pollers, which take no
// concurrency while they poll: a function that a schedule invokes too, the
// reconciler's and the watcher's shard queues, still gets its ticks);
// batches of up to BatchSize; messages the filter
// drops are deleted; after the invocation the messages are deleted except
// those reported in batchItemFailures (ReportBatchItemFailures), or none if
// the function failed, so they come back after the queue's visibility
// timeout and the queue's redrive policy moves them to its dead-letter
// queue after maxReceiveCount receives.
type queuePoller struct {
	m      *samtemplate.QueueMapping
	fn     *Function
	filter filter
	q      queueInfo
	region string
	sqs    *sqs.Client
	log    *slog.Logger
}

// concurrency is how many invocations of the mapping run at once.
func (p *queuePoller) concurrency() int {
	n := p.fn.Concurrency
	if mc := p.m.Settings.MaxConcurrency; mc > 0 {
		n = min(n, mc)
	}
	return max(n, 1)
}

func (p *queuePoller) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range p.concurrency() {
		wg.Go(func() {
			for ctx.Err() == nil {
				p.once(ctx)
			}
		})
	}
	wg.Wait()
}

// receive gathers one batch: up to BatchSize messages, ten per
// ReceiveMessage (SQS's most), for as long as MaximumBatchingWindow allows
// when the batch is not full yet.
func (p *queuePoller) receive(ctx context.Context) ([]sqstypes.Message, error) {
	size := p.m.Settings.BatchSize
	deadline := time.Now().Add(p.m.Settings.BatchWindow)
	var msgs []sqstypes.Message
	for {
		wait := int32(queueLongPoll)
		if len(msgs) > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return msgs, nil
			}
			wait = int32(min(left, queueLongPoll*time.Second) / time.Second)
		}
		out, err := p.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.q.URL),
			MaxNumberOfMessages:         int32(min(size-len(msgs), 10)),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, out.Messages...)
		if len(msgs) == 0 || len(msgs) >= size || p.m.Settings.BatchWindow == 0 {
			return msgs, nil
		}
	}
}

// once receives one batch and delivers it.
func (p *queuePoller) once(ctx context.Context) {
	msgs, err := p.receive(ctx)
	if err != nil && len(msgs) == 0 {
		if ctx.Err() == nil {
			p.log.Error("queue mapping: ReceiveMessage failed; retrying", "mapping", p.m.Name, "error", err)
			sleep(ctx, time.Second)
		}
		return
	}
	if len(msgs) == 0 {
		return
	}
	ev := events.SQSEvent{}
	var drop []sqstypes.Message
	for _, m := range msgs {
		rec := p.record(m)
		if !p.filter.match(filterView(rec)) {
			drop = append(drop, m)
			continue
		}
		ev.Records = append(ev.Records, rec)
	}
	p.delete(ctx, drop)
	if len(ev.Records) == 0 {
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		p.log.Error("queue mapping: encoding the event", "error", err)
		return
	}
	if err := p.fn.Acquire(ctx); err != nil {
		return // stopping: the messages come back after their visibility timeout
	}
	inv := p.fn.Invoke(ctx, payload)
	p.fn.Release()
	if inv.Result != ResultOK {
		return // every message comes back after its visibility timeout
	}
	failed := map[string]bool{}
	if p.m.Settings.ReportBatchItemFailures {
		var resp events.SQSEventResponse
		if json.Unmarshal(inv.Payload, &resp) == nil {
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
		}
		for id := range failed {
			known := false
			for _, r := range ev.Records {
				known = known || r.MessageId == id
			}
			if !known { // an identifier not in the batch fails all of it
				return
			}
		}
	}
	var done []sqstypes.Message
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] && !contains(drop, m) {
			done = append(done, m)
		}
	}
	p.delete(ctx, done)
}

func contains(ms []sqstypes.Message, m sqstypes.Message) bool {
	for _, x := range ms {
		if aws.ToString(x.MessageId) == aws.ToString(m.MessageId) {
			return true
		}
	}
	return false
}

func (p *queuePoller) delete(ctx context.Context, ms []sqstypes.Message) {
	for len(ms) > 0 {
		n := min(len(ms), 10)
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.q.URL)}
		for _, m := range ms[:n] {
			in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: m.MessageId, ReceiptHandle: m.ReceiptHandle})
		}
		out, err := p.sqs.DeleteMessageBatch(context.WithoutCancel(ctx), in)
		if err != nil {
			p.log.Error("queue mapping: DeleteMessageBatch failed; the messages will come again", "mapping", p.m.Name, "error", err)
		} else if len(out.Failed) > 0 {
			p.log.Error("queue mapping: some deletes failed; those messages will come again", "mapping", p.m.Name, "failed", len(out.Failed))
		}
		ms = ms[n:]
	}
}

// record is a received message as Lambda delivers it.
func (p *queuePoller) record(m sqstypes.Message) events.SQSMessage {
	body := aws.ToString(m.Body)
	md5sum := aws.ToString(m.MD5OfBody)
	if md5sum == "" {
		h := md5.Sum([]byte(body))
		md5sum = hex.EncodeToString(h[:])
	}
	rec := events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: body,
		Md5OfBody: md5sum, Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource: "aws:sqs", EventSourceARN: p.q.ARN, AWSRegion: p.region,
	}
	if rec.Attributes == nil {
		rec.Attributes = map[string]string{}
	}
	for k, a := range m.MessageAttributes {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{
			StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues, DataType: aws.ToString(a.DataType),
		}
	}
	return rec
}

// filterView is what an SQS filter pattern sees: the record, with a body
// that is JSON decoded (Lambda matches "body" patterns on its fields).
func filterView(rec events.SQSMessage) any {
	v, _ := jsonValue(rec).(map[string]any)
	if v == nil {
		return nil
	}
	var body any
	if strings.HasPrefix(strings.TrimSpace(rec.Body), "{") && json.Unmarshal([]byte(rec.Body), &body) == nil {
		v["body"] = body
	}
	return v
}
