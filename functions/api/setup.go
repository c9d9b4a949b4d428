package main

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/console"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
)

// setup loads the configuration from env and builds the function's
// handler on DynamoDB: everything a Lambda container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*lambdahttp.Adapter, error) {
	e, err := wiring.New(ctx, wiring.FunctionAPI, false, env, environ, logger)
	if err != nil {
		return nil, err
	}
	cfg := e.Config
	logger.Info("api function ready", "table_prefix", cfg.Store.TablePrefix, "region", e.AWS.Region,
		"admin_claim", cfg.Auth.AdminClaim, "admin_group", cfg.Auth.AdminGroup, "max_pending", cfg.Container.CreateQueueMaxPending)
	// The api knows the deployment's nodes from the configuration
	// document (on AWS the parameter, which it reads like the workers and
	// the reconciler; never the secret, whose TLS keys and registry
	// credentials it has no use for).
	return adapter(cfg, e.Store, logger, e.Metrics, e.Document != ""), nil
}

// loadConfig is the configuration of the api function: the DynamoDB store,
// and the optional file (docker.hosts' allowed_bind_roots bound templates).
func loadConfig(env func(string) (string, bool)) (*config.Config, error) {
	return wiring.LoadConfig(wiring.FunctionAPI, env, false)
}

// newAdapter wires the manager, the HTTP API (caller from the request
// context) and the Lambda adapter (caller from the JWT claims) on s.
// The nodes (docker.hosts, kubernetes.clusters) are not known to it.
func newAdapter(cfg *config.Config, s store.Store, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter {
	return adapter(cfg, s, logger, emf, false)
}

// adapter is newAdapter; nodesKnown says whether cfg's nodes are the
// deployment's (manager.Options.NodesKnown).
func adapter(cfg *config.Config, s store.Store, logger *slog.Logger, emf *metrics.Emitter, nodesKnown bool) *lambdahttp.Adapter {
	mo := wiring.ManagerOptions(cfg, s, logger, emf)
	mo.NodesKnown = nodesKnown
	m := manager.New(mo)
	h := httpapi.New(httpapi.Options{
		Manager:   m,
		Auth:      httpapi.ContextAuth(),
		Logger:    logger,
		BodyLimit: cfg.Server.RequestBodyLimit,
		WaitMax:   cfg.Server.WaitMax,
		Health:    storeHealth(s),
		Console:   console.OptionsFrom(cfg.Auth),
	})
	return lambdahttp.New(h, lambdahttp.AuthOptions(cfg.Auth, logger))
}
