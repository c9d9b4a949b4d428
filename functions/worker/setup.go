package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdaenv"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/secrets"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
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

func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*function, error) {
	cfg, err := lambdaenv.LoadConfig("worker", env, true)
	if err != nil {
		return nil, err
	}
	lambdaenv.WarnUnknownEnv(logger, environ)
	awsCfg, err := lambdaenv.AWSConfig(ctx, cfg.Store.Region)
	if err != nil {
		return nil, err
	}
	st := dynamostore.New(lambdaenv.DynamoDB(awsCfg, env), dynamostore.Options{TablePrefix: cfg.Store.TablePrefix})
	rt, err := docker.New(cfg.Docker, docker.Options{Scope: cfg.Docker.Scope, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%w (docker.hosts comes from the file named by %s)", err, lambdaenv.ConfigFileVar)
	}
	var ssmClient secrets.SSMAPI
	if cfg.Secrets.Source == config.SecretsSSM {
		ssmClient = ssm.NewFromConfig(awsCfg)
	}
	sec, err := secrets.New(cfg.Secrets, env, ssmClient)
	if err != nil {
		return nil, err
	}
	name, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	return newFunction(cfg, st, rt, sqs.NewFromConfig(awsCfg), sec, metrics.New(os.Stdout, map[string]string{"Function": name}), logger)
}

// newFunction wires the worker on its parts; tests call it with DynamoDB
// Local, the SQS emulator and a real Docker engine.
func newFunction(cfg *config.Config, st store.Store, rt runtime.Runtime, sqsClient sqsqueue.API, sec worker.SecretSource, emf *metrics.Emitter, logger *slog.Logger) (*function, error) {
	res, err := runtime.NewResolver(rt)
	if err != nil {
		return nil, err
	}
	m := manager.New(manager.Options{Store: st, MaxPending: cfg.Container.CreateQueueMaxPending,
		Runtimes: cfg.Container.AllowedRuntimes, WorkspaceRoot: cfg.Container.WorkspaceRoot, Logger: logger, Metrics: emf})
	w := worker.New(worker.Options{
		Manager: m, Runtimes: res,
		// No local semaphore: the CreateWorker's reserved concurrency (and
		// its event source's maximum concurrency) is the limit.
		CreateStartTimeout: cfg.Container.CreateStartTimeout, StopGrace: cfg.Container.StopGracePeriod,
		MaxAttempts: cfg.Container.MaxAttempts, Secrets: sec, Metrics: emf, Logger: logger,
	})
	f := &function{w: w, queues: map[string]*sqsqueue.Queue{}, log: logger}
	for _, u := range []string{cfg.Queue.CreateQueueURL, cfg.Queue.LifecycleQueueURL} {
		f.queues[lastPart(u, "/")] = sqsqueue.New(sqsClient, u)
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
		src := lastPart(r.EventSourceARN, ":")
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
		var rq worker.Requeuer
		if q != nil {
			rq = q
		}
		part := f.w.HandleSQSEvent(ctx, rq, events.SQSEvent{Records: bySource[src]})
		resp.BatchItemFailures = append(resp.BatchItemFailures, part.BatchItemFailures...)
	}
	return resp
}

func lastPart(s, sep string) string {
	s = strings.TrimRight(s, sep)
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return s
}
