package berthstack

import (
	"regexp"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// LogsRoutePath and StatsRoutePath are the routes served by the logs function instead of the
// api function's APIRoutePath (GET only, behind the authorizer): reading what a container
// printed, or what it uses now, needs the runtimes, which the api function does not reach.
const (
	LogsRoutePath  = "/api/containers/{id}/logs"
	StatsRoutePath = "/api/containers/{id}/stats"
)

// Logs holds the logs function behind LogsRoutePath and StatsRoutePath.
type Logs struct {
	constructs.Construct
	Function awslambda.Function
}

// newLogs adds the logs function and its route to the API: the runtimes' credentials and the
// VPC as the workers', and of the tables one instance read (GetItem) only.
func newLogs(scope constructs.Construct, p Props, common map[string]*string, tables *Tables, api *API) (*Logs, error) {
	l := &Logs{Construct: constructs.NewConstruct(scope, jsii.String("Logs"))}
	fn, err := newFunction(l.Construct, p, common, functionSpec{
		id: "LogsFunction", binary: "logs",
		description: "berth container logs and stats (GET /api/containers/{id}/logs, bounded answer; /stats)",
		timeout:     APITimeout,
		inVPC:       true,
		env: merge(map[string]*string{envAdminClaim: jsii.String(p.AdminClaim), envAdminGroup: jsii.String(p.AdminGroup)},
			runtimeEnv(p), configEnv(p)),
		statements: slices.Concat([]awsiam.PolicyStatement{
			allow([]string{"dynamodb:GetItem"}, tables.Arns([]string{dynamostore.TableInstances})...),
		}, configStatements(p), secretStatements(p), eksStatements(p)),
	})
	if err != nil {
		return nil, err
	}
	l.Function = fn
	routeFunction(l.Construct, api, "LogsFunction", fn, awsapigatewayv2.HttpMethod_GET, LogsRoutePath, StatsRoutePath)
	return l, nil
}

// routeFunction sends each of paths, on method, to fn through one
// integration named id. The integration lets API Gateway invoke the
// function from the route's path as written, {id} and all, on any method;
// template.yaml's permissions (LogsInvokePermission, StatsInvokePermission,
// ExecInvokePermission) from the route only, with the path parameter a
// wildcard, as SAM writes path parameters: the CDK writes the same. As the
// api's integrations (newAPI): API Gateway's 30 s on the resource.
func routeFunction(scope constructs.Construct, api *API, id string, fn awslambda.Function, method awsapigatewayv2.HttpMethod, paths ...string) {
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(id), fn, nil)
	for _, path := range paths {
		routes := api.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{method},
			Integration: integration,
		})
		for _, r := range *routes {
			for _, c := range *r.Node().FindAll(constructs.ConstructOrder_PREORDER) {
				if perm, ok := c.(awslambda.CfnPermission); ok {
					perm.SetSourceArn(routeSourceArn(scope, api.HTTPAPI, string(method), path))
				}
			}
		}
	}
	for _, c := range *api.HTTPAPI.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if in, ok := c.(awsapigatewayv2.CfnIntegration); ok {
			in.SetTimeoutInMillis(jsii.Number(APIIntegrationTimeout.Milliseconds()))
		}
	}
}

// pathParameter is one {name} or {name+} of a route's path.
var pathParameter = regexp.MustCompile(`\{[^}]*\}`)

// routeSourceArn is the SourceArn that lets api invoke a function from one route on any stage:
// arn:…:execute-api:<region>:<account>:<api id>/*/<method><path>, each path parameter a
// wildcard.
func routeSourceArn(scope constructs.Construct, api awsapigatewayv2.HttpApi, method, path string) *string {
	return awscdk.Stack_Of(scope).FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("execute-api"),
		Resource:     api.ApiId(),
		ResourceName: jsii.String("*/" + method + pathParameter.ReplaceAllString(path, "*")),
	})
}
