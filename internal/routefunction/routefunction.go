// Package routefunction builds the Lambda functions that serve some of
// the API's routes on the configured runtimes outside the api function
// (the logs and stats function, the exec function). It is apart from
// wiring, which berth serve and the CDK app import too, so that neither
// links the Lambda adapter.
package routefunction

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

// Setup builds a function that serves some of the API's routes
// on the configured runtimes outside the api function (the logs and
// stats function, the exec function): wiring.New, the runtimes' resolver, then
// adapter on them. With no runtime configured it starts anyway and says
// so (a request then fails with the reason instead of the function
// failing at init); serves names what then fails.
func Setup(ctx context.Context, function, serves string, env func(string) (string, bool), environ []string, logger *slog.Logger,
	adapter func(cfg *config.Config, s store.Store, res *runtime.Resolver, logger *slog.Logger, emf *metrics.Emitter) *lambdahttp.Adapter,
) (*lambdahttp.Adapter, error) {
	e, err := wiring.New(ctx, function, false, env, environ, logger)
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
		logger.Warn("no runtime configured (docker.hosts and kubernetes.clusters are empty): every " + serves + " fails")
	}
	logger.Info(function+" function ready", "table_prefix", e.Config.Store.TablePrefix, "region", e.AWS.Region,
		"runtimes", len(rts.All()))
	return adapter(e.Config, e.Store, res, logger, e.Metrics), nil
}

// Adapter is the Lambda adapter of a route function: the manager on
// s, the HTTP API (the caller from the JWT claims, the server's body and
// wait limits, then what set adds) on the patterns alone, and the
// adapter reading the caller as every function does (AuthOptions).
func Adapter(cfg *config.Config, s store.Store, logger *slog.Logger, emf *metrics.Emitter, set func(*httpapi.Options), patterns ...string) *lambdahttp.Adapter {
	o := httpapi.Options{
		Manager:   manager.New(wiring.ManagerOptions(cfg, s, logger, emf)),
		Auth:      httpapi.ContextAuth(),
		Logger:    logger,
		BodyLimit: cfg.Server.RequestBodyLimit,
		WaitMax:   cfg.Server.WaitMax,
	}
	set(&o)
	api := httpapi.New(o)
	mux := http.NewServeMux()
	for _, p := range patterns {
		mux.Handle(p, api)
	}
	return lambdahttp.New(mux, lambdahttp.AuthOptions(cfg.Auth, logger))
}
