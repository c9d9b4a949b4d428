package main

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/routefunction"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
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
	return routefunction.Setup(ctx, "logs", "logs read", env, environ, logger, newAdapter)
}

// newAdapter wires the manager (the owner and admin checks of its Get),
// the HTTP API's logs and stats routes on res and the Lambda adapter
// (caller from the JWT claims) on s. Tests call it with DynamoDB Local and
// a real Docker engine.
func newAdapter(cfg *config.Config, s store.Store, res *runtime.Resolver, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter {
	return routefunction.Adapter(cfg, s, logger, emf, func(o *httpapi.Options) {
		o.Logs, o.LogsPolled, o.Stats = res, true, res
	}, logsPattern, statsPattern)
}
