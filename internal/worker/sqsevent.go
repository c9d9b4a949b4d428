package worker

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/queue"
)

// Requeuer changes a message's visibility: SQS's ChangeMessageVisibility,
// which is how a Lambda worker asks for a retry after a backoff.
type Requeuer interface {
	Nack(ctx context.Context, d queue.Delivery, delay time.Duration) error
}

// HandleSQSEvent is the worker Lambda: each record is processed; failures
// are reported per record (ReportBatchItemFailures) after their visibility
// is set to the backoff delay, so SQS redelivers them then, and moves them
// to the dead-letter queue after maxReceiveCount. Successes are deleted by
// Lambda itself.
func (w *Worker) HandleSQSEvent(ctx context.Context, rq Requeuer, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		d := DeliveryFromSQS(rec)
		res := w.Process(ctx, d)
		if res.Ack {
			continue
		}
		if rq != nil {
			if err := rq.Nack(ctx, d, res.Delay); err != nil {
				w.log.WarnContext(ctx, "setting retry delay", "message_id", d.MessageID, "error", err)
			}
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
	}
	return resp
}

// DeliveryFromSQS converts a Lambda SQS record into a queue.Delivery.
func DeliveryFromSQS(rec events.SQSMessage) queue.Delivery {
	d := queue.Delivery{MessageID: rec.MessageId, Body: []byte(rec.Body), Handle: rec.ReceiptHandle}
	if n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"]); err == nil {
		d.ReceiveCount = n
	}
	if ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms)
	}
	if len(rec.MessageAttributes) > 0 {
		d.Attributes = make(map[string]string, len(rec.MessageAttributes))
		for k, v := range rec.MessageAttributes {
			if v.StringValue != nil {
				d.Attributes[k] = *v.StringValue
			}
		}
	}
	return d
}
