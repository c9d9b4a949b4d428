package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdasqs"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/secrets"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
	"github.com/berth-io/berth/internal/worker"
)

// function is what a Lambda container keeps between events.
type function struct {
	w *worker.Worker
	// queues maps a queue's name (the last part of its ARN and URL) to the
	// queue, so a record's retry delay is set on the queue it came from.
	queues map[string]*sqsqueue.Queue
	log    *slog.Logger
}

// setup loads the configuration from env and builds the worker on
// DynamoDB, the Docker hosts and the SQS queues.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	e, err := wiring.New(ctx, "worker", true, env, environ, logger)
	if err != nil {
		return nil, err
	}
	rts, err := configured.Build(e.Config, logger, wiring.RuntimesHint)
	if err != nil {
		return nil, err
	}
	var ssmClient secrets.SSMAPI
	if e.Config.Secrets.Source == config.SecretsSSM {
		ssmClient = ssm.NewFromConfig(e.AWS)
	}
	sec, err := secrets.New(e.Config.Secrets, env, ssmClient)
	if err != nil {
		return nil, err
	}
	res, err := rts.Resolver()
	if err != nil {
		return nil, err
	}
	if len(rts.All()) == 0 {
		// The function starts anyway, so that what is queued fails at once
		// with the reason instead of waiting on a function that cannot start.
		logger.Warn("no runtime configured (docker.hosts and kubernetes.clusters are empty): every create and start fails at once")
	}
	return newFunctionOn(e.Config, e.Store, res, e.SQS(), sec, e.Metrics, logger, wiring.EventBus(e.Config, e.AWS)), nil
}

// newFunction wires the worker on its parts; tests call it with DynamoDB
// Local, the SQS emulator and a real Docker engine. more are further
// runtimes (Kubernetes) beside rt.
func newFunction(cfg *config.Config, st store.Store, rt runtime.Runtime, sqsClient sqsqueue.API, sec worker.SecretSource, emf *metrics.Emitter, logger *slog.Logger, more ...runtime.Runtime) (*function, error) {
	res, err := runtime.NewResolver(append([]runtime.Runtime{rt}, more...)...)
	if err != nil {
		return nil, err
	}
	return newFunctionOn(cfg, st, res, sqsClient, sec, emf, logger, nil), nil
}

// newFunctionOn wires the worker on the runtimes of res (any mix, or none);
// bus, when not nil, puts the event bus's deliveries on it.
func newFunctionOn(cfg *config.Config, st store.Store, res *runtime.Resolver, sqsClient sqsqueue.API, sec worker.SecretSource, emf *metrics.Emitter, logger *slog.Logger,
	bus worker.Deliverer) *function {
	mo := wiring.ManagerOptions(cfg, st, logger, emf)
	m := manager.New(mo)
	// No local semaphore: the CreateWorker's reserved concurrency (and its
	// event source's maximum concurrency) is the limit.
	wo := wiring.WorkerOptions(cfg, m, st, res, logger, emf)
	wo.Secrets = sec
	wo.EventBus = bus
	w := worker.New(wo)
	return &function{w: w, queues: wiring.QueuesByName(cfg, sqsClient), log: logger}
}

// handle processes one batch. Records are grouped by their source queue so
// each failure's retry delay is set on the right queue.
func (f *function) handle(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	bySource := map[string][]events.SQSMessage{}
	var order []string
	for _, r := range ev.Records {
		src := wiring.QueueName(r.EventSourceARN)
		if _, seen := bySource[src]; !seen {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], r)
	}
	for _, src := range order {
		q := f.queues[src]
		if q == nil {
			f.log.WarnContext(ctx, "record from an unknown queue; its retry uses the queue's own visibility timeout", "source", src)
		}
		var rq lambdasqs.Requeuer
		if q != nil {
			rq = q
		}
		part := lambdasqs.Handle(ctx, f.w, rq, events.SQSEvent{Records: bySource[src]}, f.log)
		resp.BatchItemFailures = append(resp.BatchItemFailures, part.BatchItemFailures...)
	}
	return resp
}
