// Command logs is berth's logs Lambda function: API Gateway HTTP API events
// (payload 2.0, JWT authorizer) for the one route
// GET /api/containers/{id}/logs, served by the same internal/httpapi
// handler as berth serve and the api function, with the runtimes as its
// log source. It exists so that the api function stays free of runtime
// clients (its cold start and its IAM stay small): only this function
// reaches the Docker hosts and Kubernetes clusters to read what a
// container printed.
//
// API Gateway buffers an answer and ends it at 30 s, so a follow=true is
// answered with the bounded answer and a Berth-Next-Since cursor to poll
// with (httpapi.Options.LogsPolled); see docs/api.md, Logs.
//
// Configuration: as the worker function's (BERTH_* environment variables
// over the configuration parameter joined with the runtime secret). Log
// lines are user data: they are never logged.
package main

import (
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/lambdamain"
)

func main() {
	lambdamain.Run("logs", setup, func(a *lambdahttp.Adapter) any { return a.HandleEvent })
}
