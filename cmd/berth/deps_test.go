package main

import (
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// TestNoLambdaEvents: berth serve and the CLI link the general packages
// (outbox, worker, the stores, the Docker runtime) but no Lambda event
// types or runtime: those live in the functions' adapters (lambdahttp,
// lambdastream, lambdasqs). A general package that starts importing
// aws-lambda-go again turns this red; `go mod why` shows through which.
// Parts of the AWS SDK stay linked on purpose: the Docker runtime gets ECR
// pull credentials with it, locally as on AWS.
func TestNoLambdaEvents(t *testing.T) {
	testenv.NoDeps(t, "github.com/berth-io/berth/internal/outbox", []string{
		"github.com/aws/aws-lambda-go/",
		"github.com/berth-io/berth/internal/lambdahttp/",
		"github.com/berth-io/berth/internal/lambdastream/",
		"github.com/berth-io/berth/internal/lambdasqs/",
	})
}
