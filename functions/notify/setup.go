package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/lambdasqs"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
	"github.com/berth-io/berth/internal/worker"
)

// MisroutedRetryDelay is how long a record that is not a delivery waits
// before it is received again, on its way to the dead-letter queue after
// the queue's maxReceiveCount: long enough not to spin, short enough that
// the dead-letter alarm tells the operator within the hour.
const MisroutedRetryDelay = 5 * time.Minute

// errNoNotifyQueue is the set-up failure of a function not told its queue.
var errNoNotifyQueue = errors.New("notify: BERTH_QUEUE_NOTIFY_QUEUE_URL is not set: the notify function consumes that queue and re-sends failed deliveries to it")

// function is what a Lambda container keeps between events.
type function struct {
	p lambdasqs.Processor
	q *sqsqueue.Queue
	// source is the notify queue's name (the last part of its URL and ARN).
	source string
	log    *slog.Logger
}

// setup loads the configuration from env and builds the delivery path on
// DynamoDB, the notify queue and the event bus.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	e, err := wiring.New(ctx, wiring.FunctionNotify, false, env, environ, logger)
	if err != nil {
		return nil, err
	}
	fn, err := newFunction(e.Config, e.Store, e.SQS(), e.Metrics, logger, wiring.EventBus(e.Config, e.AWS))
	if err != nil {
		return nil, err
	}
	logger.Info("notify function ready", "notify_queue_url", e.Config.Queue.NotifyQueueURL,
		"event_bus", e.Config.Webhooks.EventBus, "allowed_networks", e.Config.Webhooks.AllowedNetworks)
	return fn, nil
}

// newFunction wires the delivery path on its parts; bus, when not nil,
// puts the event bus's deliveries on it. The worker it builds has no
// runtime: it only ever carries out deliveries (deliveriesOnly).
func newFunction(cfg *config.Config, st store.Store, sqsClient sqsqueue.API, emf *metrics.Emitter, logger *slog.Logger, bus worker.Deliverer) (*function, error) {
	if cfg.Queue.NotifyQueueURL == "" {
		return nil, errNoNotifyQueue
	}
	res, err := runtime.NewResolver()
	if err != nil {
		return nil, err
	}
	m := manager.New(wiring.ManagerOptions(cfg, st, logger, emf))
	wo := wiring.WorkerOptions(cfg, m, st, res, logger, emf)
	wo.EventBus = bus
	wo.Filter = deliveriesOnly
	return &function{
		p:      worker.New(wo),
		q:      sqsqueue.New(sqsClient, cfg.Queue.NotifyQueueURL),
		source: wiring.QueueName(cfg.Queue.NotifyQueueURL),
		log:    logger,
	}, nil
}

// handle processes one batch: each record one delivery, failures reported
// one by one (ReportBatchItemFailures), retries re-sent to the notify queue.
func (f *function) handle(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	for _, r := range ev.Records {
		if src := wiring.QueueName(r.EventSourceARN); src != f.source {
			f.log.WarnContext(ctx, "record from a queue other than the notify queue", "source", src, "notify_queue", f.source)
		}
	}
	return lambdasqs.Handle(ctx, f.p, f.q, ev, f.log)
}

// deliveriesOnly is the worker's filter here: it lets deliveries only on.
// Anything else on the notify queue was misrouted: carried out here, a
// create or a start would fail its instance for want of a runtime, so it is
// handed back untouched and ends in the dead-letter queue, whose alarm
// tells the operator. (An undecodable message is the worker's poison
// check's, which comes before.)
func deliveriesOnly(next worker.Handler) worker.Handler {
	return func(ctx context.Context, j *worker.Job) error {
		if msg := j.Msg; msg.Op != container.OpDeliver {
			j.Log.ErrorContext(ctx, "not a delivery: left for the dead-letter queue", "message_id", j.Delivery.MessageID)
			return worker.Settle(worker.Result{Delay: MisroutedRetryDelay, Reason: "misrouted: " + string(msg.Op) + " on the notify queue"})
		}
		return next(ctx, j)
	}
}

var _ worker.Middleware = deliveriesOnly
