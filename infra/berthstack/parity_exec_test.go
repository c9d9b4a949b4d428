package berthstack

import (
	"slices"
	"testing"

	"github.com/berth-io/berth/infra/cfnshape"
)

// execPermissionSourceArns is template.yaml's ExecInvokePermission: the exec route (POST, any
// stage) with the path parameter a wildcard.
var execPermissionSourceArns = []string{
	"arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${<AWS::ApiGatewayV2::Api>}/*/POST/api/containers/*/exec",
}

// checkExecPermission: the permission that lets API Gateway invoke the exec function has the
// same SourceArn in the CDK stack as in template.yaml (as checkLogsPermission for the logs
// function).
func checkExecPermission(t *testing.T, sam, cdk *cfnshape.Resolved, cdkFunction string) {
	t.Helper()
	for _, c := range []struct {
		name, function string
		r              *cfnshape.Resolved
	}{
		{"template.yaml", "ExecFunction", sam},
		{"the CDK stack", cdkFunction, cdk},
	} {
		if got := permissionSourceArns(c.r, c.function); !slices.Equal(got, execPermissionSourceArns) {
			t.Errorf("%s: the exec function's permissions' SourceArns %q, want %q", c.name, got, execPermissionSourceArns)
		}
	}
}
