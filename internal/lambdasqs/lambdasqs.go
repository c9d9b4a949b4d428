// Package lambdasqs adapts SQS-triggered Lambda events to berth's queue
// consumers: each record becomes a queue.Delivery, each failure a batch item
// failure after its visibility is set to the retry backoff. It keeps
// aws-lambda-go's event types out of internal/worker, which knows queues,
// not Lambda.
package lambdasqs

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/worker"
)

// Processor handles one delivery and says whether to acknowledge it or
// retry it after a delay; it must not panic on bad input (worker.Worker).
type Processor interface {
	Process(ctx context.Context, d queue.Delivery) worker.Result
}

var _ Processor = (*worker.Worker)(nil)

// Requeuer is the SQS queue a record came from: Nack changes its
// visibility (ChangeMessageVisibility), which is how a Lambda consumer asks
// for a retry after a backoff; Send re-sends an operation waiting for an
// unavailable runtime as a fresh message (worker.Result.Requeue).
type Requeuer interface {
	Nack(ctx context.Context, d queue.Delivery, delay time.Duration) error
	Send(ctx context.Context, msgs []queue.Outgoing) error
}

// Handle processes each record of ev with p. Failures are reported per
// record (ReportBatchItemFailures) after their visibility is set to the
// backoff delay, so SQS redelivers them then and moves them to the
// dead-letter queue after maxReceiveCount; successes are deleted by Lambda
// itself. A record whose result asks for a re-send (the runtime was
// unavailable: no attempt is spent) is sent afresh to rq and then counts as
// done; if the send fails it is handed back like a failure. rq may be nil:
// a failure then comes back after the queue's own visibility timeout. A
// failed visibility change is only logged, since the record is reported
// failed either way.
func Handle(ctx context.Context, p Processor, rq Requeuer, ev events.SQSEvent, logger *slog.Logger) events.SQSEventResponse {
	if logger == nil {
		logger = slog.Default()
	}
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		d := Delivery(rec)
		res := p.Process(ctx, d)
		if res.Ack {
			continue
		}
		if res.Requeue != nil && rq != nil {
			// Sent afresh, the record is done: Lambda deletes it, and SQS's
			// receive count starts again on the new message.
			err := rq.Send(ctx, []queue.Outgoing{*res.Requeue})
			if err == nil {
				continue
			}
			logger.WarnContext(ctx, "re-sending a message; handing it back instead", "message_id", d.MessageID, "error", err)
		}
		if rq != nil {
			if err := rq.Nack(ctx, d, res.Delay); err != nil {
				logger.WarnContext(ctx, "setting retry delay", "message_id", d.MessageID, "error", err)
			}
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
	}
	return resp
}

// Delivery converts a Lambda SQS record into a queue.Delivery.
func Delivery(rec events.SQSMessage) queue.Delivery {
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
