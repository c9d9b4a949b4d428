// Command api is berth's API Lambda function: API Gateway HTTP API events
// (payload 2.0, JWT authorizer) served by internal/httpapi through
// internal/lambdahttp, on the DynamoDB store.
//
// Configuration comes from the environment only (BERTH_* variables, see
// internal/config; BERTH_STORE_TABLE_PREFIX names the tables). Clients are
// built once per Lambda container, before the first event. The Docker and
// Kubernetes clients are not linked in (deps_test.go).
package main

import (
	"github.com/berth-io/berth/internal/lambdahttp"
	"github.com/berth-io/berth/internal/lambdamain"
)

func main() {
	lambdamain.Run("api", setup, func(a *lambdahttp.Adapter) any { return a.HandleEvent })
}
