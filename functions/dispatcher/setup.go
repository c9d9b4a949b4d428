package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// setup loads the configuration from env and builds the stream handler on
// DynamoDB and SQS: everything a Lambda container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*outbox.StreamHandler, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	if unknown := config.UnknownEnv(environ); len(unknown) > 0 {
		logger.Warn("ignoring unknown BERTH_ environment variables (misspelt?)", "variables", unknown)
	}
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Store.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Store.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION or BERTH_STORE_REGION")
	}
	// An endpoint override is DynamoDB Local (tests, `sam local`), which
	// sends no CRC32 header on error replies.
	local := slices.ContainsFunc([]string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"}, func(k string) bool {
		v, ok := env(k)
		return ok && v != ""
	})
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if local {
			o.DisableValidateResponseChecksum = true
		}
		o.RetryMaxAttempts = 3
	})
	sqsClient := sqs.NewFromConfig(awsCfg)
	fn, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	h := newHandler(cfg, ddb, sqsClient, metrics.New(os.Stdout, map[string]string{"Function": fn}), logger)
	logger.Info("dispatcher function ready", "outbox_table", h.OutboxTable, "region", awsCfg.Region,
		"create_queue_url", cfg.Queue.CreateQueueURL, "lifecycle_queue_url", cfg.Queue.LifecycleQueueURL)
	return h, nil
}

// newHandler wires the dispatcher on the clients.
func newHandler(cfg *config.Config, ddb *dynamodb.Client, sqsClient sqsqueue.API, emf *metrics.Emitter, logger *slog.Logger) *outbox.StreamHandler {
	return &outbox.StreamHandler{
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

// loadConfig is config.Load on the environment, with the store backend
// fixed to dynamodb and the queue backend to sqs (the only ones a Lambda
// function can use), so that the table prefix and both queue URLs are
// validated.
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	fixed := map[string]string{
		"BERTH_STORE_BACKEND": string(config.StoreDynamoDB),
		"BERTH_QUEUE_BACKEND": string(config.QueueSQS),
	}
	for k, want := range fixed {
		if v, ok := env(k); ok && strings.TrimSpace(v) != want {
			return nil, fmt.Errorf("config: %s=%q: the dispatcher function runs only with %q", k, v, want)
		}
	}
	return config.Load("", func(k string) (string, bool) {
		if v, ok := fixed[k]; ok {
			return v, true
		}
		return env(k)
	})
}

// logLevel maps Lambda's advanced logging control (AWS_LAMBDA_LOG_LEVEL)
// to slog; INFO when unset.
func logLevel(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}
