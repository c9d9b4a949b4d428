package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdaenv"
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
	lambdaenv.WarnUnknownEnv(logger, environ)
	awsCfg, err := lambdaenv.AWSConfig(ctx, cfg.Store.Region)
	if err != nil {
		return nil, err
	}
	s := dynamostore.New(lambdaenv.DynamoDB(awsCfg, env), dynamostore.Options{TablePrefix: cfg.Store.TablePrefix})
	fn, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	emf := metrics.New(os.Stdout, map[string]string{"Function": fn})
	logger.Info("api function ready", "table_prefix", cfg.Store.TablePrefix, "region", awsCfg.Region,
		"admin_claim", cfg.Auth.AdminClaim, "admin_group", cfg.Auth.AdminGroup, "max_pending", cfg.Container.CreateQueueMaxPending)
	return newAdapter(cfg, s, logger, emf), nil
}

// loadConfig is the configuration of the api function: the DynamoDB store,
// and the optional file (docker.hosts' allowed_bind_roots bound templates).
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	return lambdaenv.LoadConfig("api", env, false)
}

// newAdapter wires the manager, the HTTP API (caller from the request
// context) and the Lambda adapter (caller from the JWT claims) on s.
func newAdapter(cfg *config.Config, s store.Store, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter {
	m := manager.New(manager.Options{
		Store:         s,
		MaxPending:    cfg.Container.CreateQueueMaxPending,
		Runtimes:      cfg.Container.AllowedRuntimes,
		BindRoots:     cfg.Docker.BindRoots(),
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
		Health:    storeHealth(s),
	})
	return lambdahttp.New(h, lambdahttp.Options{AdminClaim: cfg.Auth.AdminClaim, AdminGroup: cfg.Auth.AdminGroup, Logger: logger})
}
