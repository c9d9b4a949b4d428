// Package sqsqueue is the queue.Queue of the AWS deployment, on Amazon SQS
// (standard queues) through aws-sdk-go-v2.
//
// Mapping: Send is SendMessageBatch (per-entry failures become a
// *queue.BatchError; entries that failed through no fault of the sender are
// retried twice first); Receive is ReceiveMessage with long polling, asking
// for ApproximateReceiveCount, SentTimestamp and every message attribute;
// Ack is DeleteMessage; Nack is ChangeMessageVisibility. The visibility
// timeout, maxReceiveCount and dead-letter queue are properties of the SQS
// queue itself (CreateWithDLQ makes such a pair for tests and dev setups;
// deployed queues come from the stack).
//
// SQS counts in whole seconds: delays and Nack delays are rounded up to the
// next second, and a Receive wait is served in long polls of whole seconds
// (at most 20 each), so it may last up to a second longer than asked.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/queue"
)

// API is the part of *sqs.Client the queue uses; tests wrap the real client
// to inject faults.
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ API = (*sqs.Client)(nil)

// SQS limits the queue works within.
const (
	maxWaitSeconds       = 20           // ReceiveMessage WaitTimeSeconds
	maxDelaySeconds      = 900          // DelaySeconds
	maxVisibilitySeconds = 12 * 60 * 60 // ChangeMessageVisibility
	// sendRetries is how often entries that failed without the sender's
	// fault (throttling, internal errors) are sent again within one Send.
	sendRetries = 2
)

// Queue is a queue.Queue on one SQS queue. It is safe for concurrent use.
type Queue struct {
	api API
	url string
	// retryBackoff is the pause before re-sending failed entries.
	retryBackoff time.Duration
}

var _ queue.Queue = (*Queue)(nil)

// New returns the queue at url (as GetQueueUrl or CreateQueue return it).
func New(api API, url string) *Queue {
	return &Queue{api: api, url: url, retryBackoff: 50 * time.Millisecond}
}

// URL returns the queue's URL.
func (q *Queue) URL() string { return q.url }

// Send sends up to queue.MaxBatch messages in one SendMessageBatch. Entries
// SQS rejects are returned in a *queue.BatchError (after two retries of those
// that failed through no fault of the sender); an error of the whole call is
// returned as it is and means nothing was sent. Attributes with empty values
// are dropped: SQS refuses them.
func (q *Queue) Send(ctx context.Context, msgs []queue.Outgoing) error {
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) > queue.MaxBatch {
		return fmt.Errorf("sqsqueue: batch of %d messages, at most %d", len(msgs), queue.MaxBatch)
	}
	pending := make(map[string]types.SendMessageBatchRequestEntry, len(msgs))
	for _, m := range msgs {
		if m.ID == "" {
			return errors.New("sqsqueue: batch entry without an ID")
		}
		if _, dup := pending[m.ID]; dup {
			return fmt.Errorf("sqsqueue: batch entry ID %q appears twice", m.ID)
		}
		pending[m.ID] = types.SendMessageBatchRequestEntry{
			Id:                aws.String(m.ID),
			MessageBody:       aws.String(string(m.Body)),
			DelaySeconds:      seconds(m.Delay, maxDelaySeconds),
			MessageAttributes: toAttributes(m.Attributes),
		}
	}
	failed := map[string]error{}
	for attempt := 0; ; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(pending))
		for _, m := range msgs { // the caller's order
			if e, ok := pending[m.ID]; ok {
				entries = append(entries, e)
			}
		}
		out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			if attempt == 0 {
				return fmt.Errorf("sqsqueue: send to %s: %w", q.url, err)
			}
			// A retry of some entries failed whole: those entries failed.
			for id := range pending {
				failed[id] = fmt.Errorf("sqsqueue: send to %s: %w", q.url, err)
			}
			break
		}
		for _, s := range out.Successful {
			delete(pending, aws.ToString(s.Id))
		}
		retry := false
		for _, f := range out.Failed {
			id := aws.ToString(f.Id)
			failed[id] = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			if f.SenderFault {
				delete(pending, id)
			} else {
				retry = true
			}
		}
		if !retry || attempt == sendRetries {
			break
		}
		for id := range pending {
			delete(failed, id)
		}
		select {
		case <-ctx.Done():
			for id := range pending {
				failed[id] = ctx.Err()
			}
			return &queue.BatchError{Failed: failed}
		case <-time.After(q.retryBackoff << attempt):
		}
	}
	if len(failed) > 0 {
		return &queue.BatchError{Failed: failed}
	}
	return nil
}

// EntryError is SQS's reason for refusing one entry of a batch.
type EntryError struct {
	Code, Message string
	SenderFault   bool
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("sqsqueue: entry refused: %s: %s (sender fault: %t)", e.Code, e.Message, e.SenderFault)
}

// Receive long-polls for up to wait and returns at most max (1..10)
// messages, as soon as there are some.
func (q *Queue) Receive(ctx context.Context, max int, wait time.Duration) ([]queue.Delivery, error) {
	if max < 1 || max > queue.MaxBatch {
		return nil, fmt.Errorf("sqsqueue: receive max %d, want 1..%d", max, queue.MaxBatch)
	}
	deadline := time.Now().Add(wait)
	for {
		remaining := time.Until(deadline)
		out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(q.url),
			MaxNumberOfMessages:   int32(max),
			WaitTimeSeconds:       seconds(remaining, maxWaitSeconds),
			MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameApproximateReceiveCount,
				types.MessageSystemAttributeNameSentTimestamp,
			},
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("sqsqueue: receive from %s: %w", q.url, err)
		}
		if len(out.Messages) > 0 {
			ds := make([]queue.Delivery, 0, len(out.Messages))
			for _, m := range out.Messages {
				ds = append(ds, toDelivery(m))
			}
			return ds, nil
		}
		if time.Until(deadline) <= 0 {
			return nil, nil
		}
	}
}

// Ack deletes the message. SQS ignores a handle that is not the message's
// latest receipt (the call succeeds and deletes nothing).
func (q *Queue) Ack(ctx context.Context, d queue.Delivery) error {
	_, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(d.Handle)})
	if err != nil {
		return fmt.Errorf("sqsqueue: delete message %s from %s: %w", d.MessageID, q.url, err)
	}
	return nil
}

// Nack sets the message's visibility timeout to delay (rounded up to whole
// seconds; 0 makes it visible at once). SQS counts a visibility timeout from
// now, so this is "visible again after delay".
func (q *Queue) Nack(ctx context.Context, d queue.Delivery, delay time.Duration) error {
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(d.Handle),
		VisibilityTimeout: seconds(delay, maxVisibilitySeconds),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: change visibility of message %s on %s: %w", d.MessageID, q.url, err)
	}
	return nil
}

func toDelivery(m types.Message) queue.Delivery {
	d := queue.Delivery{
		MessageID: aws.ToString(m.MessageId),
		Body:      []byte(aws.ToString(m.Body)),
		Handle:    aws.ToString(m.ReceiptHandle),
	}
	if n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil {
		d.ReceiveCount = n
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms)
	}
	for k, v := range m.MessageAttributes {
		if v.StringValue == nil {
			continue
		}
		if d.Attributes == nil {
			d.Attributes = make(map[string]string, len(m.MessageAttributes))
		}
		d.Attributes[k] = *v.StringValue
	}
	return d
}

func toAttributes(in map[string]string) map[string]types.MessageAttributeValue {
	var out map[string]types.MessageAttributeValue
	for k, v := range in {
		if v == "" {
			continue
		}
		if out == nil {
			out = make(map[string]types.MessageAttributeValue, len(in))
		}
		out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return out
}

// seconds rounds d up to whole seconds within 0..limit.
func seconds(d time.Duration, limit int32) int32 {
	if d <= 0 {
		return 0
	}
	s := math.Ceil(d.Seconds())
	if s > float64(limit) {
		return limit
	}
	return int32(s)
}
