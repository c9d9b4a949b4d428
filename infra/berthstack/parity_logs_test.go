package berthstack

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/berth-io/berth/infra/cfnshape"
)

// logsPermissionSourceArns are template.yaml's LogsInvokePermission and StatsInvokePermission:
// each route (GET, any stage) with the path parameter a wildcard, not the CDK's default of the
// path as written ({id}) on any method.
var logsPermissionSourceArns = []string{
	"arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${<AWS::ApiGatewayV2::Api>}/*/GET/api/containers/*/logs",
	"arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${<AWS::ApiGatewayV2::Api>}/*/GET/api/containers/*/stats",
}

// checkLogsPermission: the permission that lets API Gateway invoke the logs function has the
// same SourceArn in the CDK stack (cdkFunction: the function's logical id) as in template.yaml,
// both resolved and not yet normalized (TestParityWithSAM, for each parameter set; the
// comparison after Normalize sees only which API a SourceArn names).
func checkLogsPermission(t *testing.T, sam, cdk *cfnshape.Resolved, cdkFunction string) {
	t.Helper()
	for _, c := range []struct {
		name, function string
		r              *cfnshape.Resolved
	}{
		{"template.yaml", "LogsFunction", sam},
		{"the CDK stack", cdkFunction, cdk},
	} {
		if got := permissionSourceArns(c.r, c.function); !slices.Equal(got, logsPermissionSourceArns) {
			t.Errorf("%s: the logs function's permissions' SourceArns %q, want %q", c.name, got, logsPermissionSourceArns)
		}
	}
}

// permissionSourceArns are the SourceArns of the Lambda permissions for function, each written
// out with a reference as ${<the referenced resource's type>}.
func permissionSourceArns(r *cfnshape.Resolved, function string) []string {
	var out []string
	for _, res := range r.Resources {
		props, _ := res.Body["Properties"].(map[string]any)
		if fn, ok := props["FunctionName"].(cfnshape.Ref); res.Type != "AWS::Lambda::Permission" || !ok || fn.ID != function {
			continue
		}
		var b strings.Builder
		var write func(v any)
		write = func(v any) {
			switch v := v.(type) {
			case string:
				b.WriteString(v)
			case cfnshape.Ref:
				typ := "?"
				if to, ok := r.Resources[v.ID]; ok {
					typ = to.Type
				}
				b.WriteString("${<" + typ + ">}")
			default: // a concat: its parts in order
				rv := reflect.ValueOf(v)
				if rv.Kind() != reflect.Slice {
					b.WriteString("?")
					return
				}
				for i := range rv.Len() {
					write(rv.Index(i).Interface())
				}
			}
		}
		write(props["SourceArn"])
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}
