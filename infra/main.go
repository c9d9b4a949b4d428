// Command infra is berth's CDK app: `cdk deploy` from this directory (cdk.json runs it), or
// `CDK_OUTDIR=cdk.out go run .` to write the template offline. It builds one stack, named by
// the StackName context value (default berth), from the function binaries `make build` leaves
// in ../dist. Settings are the SAM template's parameters: `-c CreateQueueMaxConcurrency=5`, or
// BERTH_CDK_CREATE_QUEUE_MAX_CONCURRENCY=5 in the environment (context wins).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/infra/berthstack"
)

func main() {
	defer jsii.Close()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	lookup := berthstack.ContextOrEnv(app.Node(), os.LookupEnv)
	props, err := berthstack.LoadProps(lookup)
	if err != nil {
		return err
	}
	name, ok := lookup(berthstack.ContextStackName)
	if !ok {
		name = berthstack.DefaultStackName
	}
	// No Env: like template.yaml, the stack is environment-agnostic and deploys to the account
	// and region of the caller's profile.
	if _, err := berthstack.New(app, name, nil, props); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}
