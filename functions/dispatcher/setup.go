package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/lambdaenv"
	"github.com/berth-io/berth/internal/lambdastream"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// setup loads the configuration from env and builds the stream handler on
// DynamoDB and SQS: everything a Lambda container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*lambdastream.Handler, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	lambdaenv.WarnUnknownEnv(logger, environ)
	awsCfg, err := lambdaenv.AWSConfig(ctx, cfg.Store.Region)
	if err != nil {
		return nil, err
	}
	fn, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	h := newHandler(cfg, lambdaenv.DynamoDB(awsCfg, env), sqs.NewFromConfig(awsCfg), metrics.New(os.Stdout, map[string]string{"Function": fn}), logger)
	logger.Info("dispatcher function ready", "outbox_table", h.OutboxTable, "region", awsCfg.Region,
		"create_queue_url", cfg.Queue.CreateQueueURL, "lifecycle_queue_url", cfg.Queue.LifecycleQueueURL)
	return h, nil
}

// newHandler wires the dispatcher on the clients.
func newHandler(cfg *config.Config, ddb *dynamodb.Client, sqsClient sqsqueue.API, emf *metrics.Emitter, logger *slog.Logger) *lambdastream.Handler {
	return &lambdastream.Handler{
		Dispatcher: &outbox.Dispatcher{
			Queues: map[outbox.QueueName]queue.Queue{
				outbox.CreateQueue:    sqsqueue.New(sqsClient, cfg.Queue.CreateQueueURL),
				outbox.LifecycleQueue: sqsqueue.New(sqsClient, cfg.Queue.LifecycleQueueURL),
			},
			Store:   dynamostore.New(ddb, dynamostore.Options{TablePrefix: cfg.Store.TablePrefix}),
			Metrics: emf,
			Logger:  logger,
		},
		OutboxTable: dynamostore.TableName(cfg.Store.TablePrefix, dynamostore.TableOutbox),
		Logger:      logger,
	}
}

// loadConfig is the dispatcher's configuration: the DynamoDB store and the
// two SQS queues.
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	return lambdaenv.LoadConfig("dispatcher", env, true)
}
