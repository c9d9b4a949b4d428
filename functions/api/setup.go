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

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// setup loads the configuration from env and builds the function's
// handler on DynamoDB: everything a Lambda container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*lambdahttp.Adapter, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	if unknown := config.UnknownEnv(environ); len(unknown) > 0 {
		logger.Warn("ignoring unknown BERTH_ environment variables (misspelt?)", "variables", unknown)
	}
	client, err := dynamoClient(ctx, cfg.Store.Region, env)
	if err != nil {
		return nil, err
	}
	s := dynamostore.New(client, dynamostore.Options{TablePrefix: cfg.Store.TablePrefix})
	fn, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	emf := metrics.New(os.Stdout, map[string]string{"Function": fn})
	logger.Info("api function ready", "table_prefix", cfg.Store.TablePrefix, "region", client.Options().Region,
		"admin_claim", cfg.Auth.AdminClaim, "admin_group", cfg.Auth.AdminGroup, "max_pending", cfg.Container.CreateQueueMaxPending)
	return newAdapter(cfg, s, logger, emf), nil
}

// loadConfig is config.Load on the environment, with the store backend
// fixed to dynamodb (the only store a Lambda function can use) so that
// store.table_prefix is validated as a table prefix.
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	const backendVar = "BERTH_STORE_BACKEND"
	if b, ok := env(backendVar); ok && config.StoreBackend(strings.TrimSpace(b)) != config.StoreDynamoDB {
		return nil, fmt.Errorf("config: %s=%q: the api function runs only on the %q store", backendVar, b, config.StoreDynamoDB)
	}
	cfg, err := config.Load("", func(k string) (string, bool) {
		if k == backendVar {
			return string(config.StoreDynamoDB), true
		}
		return env(k)
	})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// dynamoClient builds the DynamoDB client from the SDK's default chain
// (the function's role, AWS_REGION), in region if the config names one.
func dynamoClient(ctx context.Context, region string, env func(string) (string, bool)) (*dynamodb.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
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
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if local {
			o.DisableValidateResponseChecksum = true
		}
	}), nil
}

// newAdapter wires the manager, the HTTP API (caller from the request
// context) and the Lambda adapter (caller from the JWT claims) on s.
func newAdapter(cfg *config.Config, s store.Store, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter {
	m := manager.New(manager.Options{
		Store:         s,
		MaxPending:    cfg.Container.CreateQueueMaxPending,
		Runtimes:      cfg.Container.AllowedRuntimes,
		BindRoots:     bindRoots(cfg),
		WorkspaceRoot: cfg.Container.WorkspaceRoot,
		Logger:        logger,
		Metrics:       emf,
	})
	h := httpapi.New(httpapi.Options{
		Manager:   m,
		Auth:      httpapi.ContextAuth(),
		Logger:    logger,
		BodyLimit: cfg.Server.RequestBodyLimit,
		WaitMax:   cfg.Server.WaitMax,
	})
	return lambdahttp.New(h, lambdahttp.Options{AdminClaim: cfg.Auth.AdminClaim, AdminGroup: cfg.Auth.AdminGroup, Logger: logger})
}

// bindRoots is the union of the Docker hosts' allowed_bind_roots.
func bindRoots(cfg *config.Config) []string {
	var roots []string
	for _, h := range cfg.Docker.Hosts {
		for _, r := range h.AllowedBindRoots {
			if !slices.Contains(roots, r) {
				roots = append(roots, r)
			}
		}
	}
	return roots
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
