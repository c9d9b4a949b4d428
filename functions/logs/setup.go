package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/wiring"
)

// The routes this function serves; API Gateway sends it nothing else, and
// anything else that reaches it is 404.
const (
	logsPattern  = "GET /api/containers/{id}/logs"
	statsPattern = "GET /api/containers/{id}/stats"
)

// setup loads the configuration from env and builds the function's
// handler on DynamoDB and the configured runtimes: everything a Lambda
// container keeps between events.
func setup(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (*lambdahttp.Adapter, error) {
	e, err := wiring.New(ctx, "logs", false, env, environ, logger)
	if err != nil {
		return nil, err
	}
	rts, err := configured.Build(e.Config, logger, wiring.RuntimesHint)
	if err != nil {
		return nil, err
	}
	res, err := rts.Resolver()
	if err != nil {
		return nil, err
	}
	if len(rts.All()) == 0 {
		// The function starts anyway: a read then fails with the reason
		// instead of the function failing at init.
		logger.Warn("no runtime configured (docker.hosts and kubernetes.clusters are empty): every logs read fails")
	}
	logger.Info("logs function ready", "table_prefix", e.Config.Store.TablePrefix, "region", e.AWS.Region,
		"runtimes", len(rts.All()))
	return newAdapter(e.Config, e.Store, res, logger, e.Metrics), nil
}

// newAdapter wires the manager (the owner and admin checks of its Get),
// the HTTP API's logs and stats routes on res and the Lambda adapter (caller from the
// JWT claims) on s. Tests call it with DynamoDB Local and a real Docker
// engine.
func newAdapter(cfg *config.Config, s store.Store, res *runtime.Resolver, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter {
	m := manager.New(wiring.ManagerOptions(cfg, s, logger, emf))
	api := httpapi.New(httpapi.Options{
		Manager:    m,
		Auth:       httpapi.ContextAuth(),
		Logger:     logger,
		BodyLimit:  cfg.Server.RequestBodyLimit,
		WaitMax:    cfg.Server.WaitMax,
		Logs:       res,
		LogsPolled: true,
		Stats:      res,
	})
	mux := http.NewServeMux()
	mux.Handle(logsPattern, api)
	mux.Handle(statsPattern, api)
	return lambdahttp.New(mux, lambdahttp.AuthOptions(cfg.Auth, logger))
}
