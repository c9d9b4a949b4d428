package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdaenv"
	"github.com/berth-io/berth/internal/lambdasqs"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/secrets"
	"github.com/berth-io/berth/internal/store"
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
	e, err := lambdaenv.New(ctx, "worker", true, env, environ, logger)
	if err != nil {
		return nil, err
	}
	rt, err := docker.New(e.Config.Docker, docker.Options{Scope: e.Config.Docker.Scope, Logger: logger})
	if err != nil {
		return nil, lambdaenv.DockerHostsHint(err)
	}
	var ssmClient secrets.SSMAPI
	if e.Config.Secrets.Source == config.SecretsSSM {
		ssmClient = ssm.NewFromConfig(e.AWS)
	}
	sec, err := secrets.New(e.Config.Secrets, env, ssmClient)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.FromConfig(e.Config, logger)
	if err != nil {
		return nil, fmt.Errorf("%w (kubernetes.clusters comes from the secret named by %s or the file named by %s)",
			err, lambdaenv.ConfigSecretVar, lambdaenv.ConfigFileVar)
	}
	var more []runtime.Runtime
	if kube != nil {
		more = append(more, kube)
	}
	return newFunction(e.Config, e.Store, rt, e.SQS(), sec, e.Metrics, logger, more...)
}

// newFunction wires the worker on its parts; tests call it with DynamoDB
// Local, the SQS emulator and a real Docker engine. more are further
// runtimes (Kubernetes) beside rt.
func newFunction(cfg *config.Config, st store.Store, rt runtime.Runtime, sqsClient sqsqueue.API, sec worker.SecretSource, emf *metrics.Emitter, logger *slog.Logger, more ...runtime.Runtime) (*function, error) {
	res, err := runtime.NewResolver(append([]runtime.Runtime{rt}, more...)...)
	if err != nil {
		return nil, err
	}
	m := manager.New(lambdaenv.ManagerOptions(cfg, st, logger, emf))
	// No local semaphore: the CreateWorker's reserved concurrency (and its
	// event source's maximum concurrency) is the limit.
	wo := lambdaenv.WorkerOptions(cfg, m, st, res, logger, emf)
	wo.Secrets = sec
	w := worker.New(wo)
	f := &function{w: w, queues: map[string]*sqsqueue.Queue{}, log: logger}
	for _, u := range []string{cfg.Queue.CreateQueueURL, cfg.Queue.LifecycleQueueURL} {
		f.queues[lambdaenv.QueueName(u)] = sqsqueue.New(sqsClient, u)
	}
	return f, nil
}

// handle processes one batch. Records are grouped by their source queue so
// each failure's retry delay is set on the right queue.
func (f *function) handle(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	bySource := map[string][]events.SQSMessage{}
	var order []string
	for _, r := range ev.Records {
		src := lambdaenv.QueueName(r.EventSourceARN)
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
