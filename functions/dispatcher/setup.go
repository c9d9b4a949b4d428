package main

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/wiring"
)

// setup loads the configuration from env and builds the stream handler on
// DynamoDB and SQS: everything a Lambda container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*lambdastream.Handler, error) {
	e, err := wiring.New(ctx, "dispatcher", true, env, environ, logger)
	if err != nil {
		return nil, err
	}
	h := newHandler(e.Config, e.Store, e.SQS(), e.Metrics, logger)
	logger.Info("dispatcher function ready", "outbox_table", h.OutboxTable, "region", e.AWS.Region,
		"create_queue_url", e.Config.Queue.CreateQueueURL, "lifecycle_queue_url", e.Config.Queue.LifecycleQueueURL)
	return h, nil
}

// newHandler wires the dispatcher on the store and the SQS client.
func newHandler(cfg *config.Config, st store.OutboxStore, sqsClient sqsqueue.API, emf *metrics.Emitter, logger *slog.Logger) *lambdastream.Handler {
	return &lambdastream.Handler{
		Dispatcher: &outbox.Dispatcher{
			Queues:  wiring.Queues(cfg, sqsClient),
			Store:   st,
			Metrics: emf,
			Logger:  logger,
		},
		OutboxTable: dynamostore.TableName(cfg.Store.TablePrefix, dynamostore.TableOutbox),
		Logger:      logger,
	}
}
