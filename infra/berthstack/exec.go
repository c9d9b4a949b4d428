package berthstack

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// ExecRoutePath is the route served by the exec function instead of the api function's
// APIRoutePath (POST only, behind the authorizer): running a command in a container needs the
// runtimes, which the api function does not reach, and writes the instance's history, which
// the logs function never does.
const ExecRoutePath = "/api/containers/{id}/exec"

// Exec holds the exec function behind ExecRoutePath.
type Exec struct {
	constructs.Construct
	Function awslambda.Function
}

// newExec adds the exec function and its route to the API: the runtimes' credentials and the
// VPC as the logs function's; of the tables, the instance read and its history written (a
// transition that keeps the status puts the instance item and an event item), the template
// read (its exec flag) and the exec leases (counters items).
func newExec(scope constructs.Construct, p Props, common map[string]*string, tables *Tables, api *API) (*Exec, error) {
	x := &Exec{Construct: constructs.NewConstruct(scope, jsii.String("Exec"))}
	fn, err := newFunction(x.Construct, p, common, functionSpec{
		id: "ExecFunction", binary: "exec",
		description: "berth exec (POST /api/containers/{id}/exec, one command in a running container, at most 25 s)",
		timeout:     APITimeout,
		inVPC:       true,
		env: merge(map[string]*string{envAdminClaim: jsii.String(p.AdminClaim), envAdminGroup: jsii.String(p.AdminGroup)},
			runtimeEnv(p), configEnv(p)),
		statements: slices.Concat([]awsiam.PolicyStatement{
			allow([]string{"dynamodb:GetItem", "dynamodb:PutItem"}, tables.Arns([]string{dynamostore.TableInstances})...),
			allow([]string{"dynamodb:PutItem"}, tables.Arns([]string{dynamostore.TableEvents})...),
			allow([]string{"dynamodb:GetItem"}, tables.Arns([]string{dynamostore.TableTemplates})...),
			allow([]string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}, tables.Arns([]string{dynamostore.TableCounters})...),
		}, configStatements(p), secretStatements(p), eksStatements(p)),
	})
	if err != nil {
		return nil, err
	}
	x.Function = fn
	routeFunction(x.Construct, api, "ExecFunction", fn, awsapigatewayv2.HttpMethod_POST, ExecRoutePath)
	return x, nil
}
