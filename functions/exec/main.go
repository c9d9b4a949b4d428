// Command exec is berth's exec Lambda function: API Gateway HTTP API
// events (payload 2.0, JWT authorizer) for the one route
// POST /api/containers/{id}/exec, served by the same internal/httpapi
// handler as berth serve, with the runtimes running the commands. It is a
// function of its own, not the api's (which holds no runtime client) nor
// the logs function's (which writes nothing): it reaches the Docker hosts
// and Kubernetes clusters, and it writes the instance's history (each
// exec's start and end) and the exec leases in the counters table, and
// nothing else.
//
// API Gateway ends a request at 30 s, so an exec's timeout is held to
// MaxTimeout whatever server.exec_max_timeout says (docs/api.md, Exec).
//
// Configuration: as the logs function's (BERTH_* environment variables
// over the configuration parameter joined with the runtime secret). A
// command's output, stdin and env values are never logged.
package main

import (
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/lambdamain"
)

func main() {
	lambdamain.Run("exec", setup, func(a *lambdahttp.Adapter) any { return a.HandleEvent })
}
