package samtemplate

import "testing"

func TestAllows(t *testing.T) {
	f := &Function{Statements: []Statement{
		{Effect: "Allow", Actions: []string{"ssm:GetParameter"}, Resources: []string{"arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/*"}},
		{Effect: "Allow", Actions: []string{"secretsmanager:GetSecretValue"}, Resources: []string{"arn:aws:secretsmanager:eu-west-1:1:secret:rt"}},
		{Effect: "Deny", Actions: []string{"ssm:*"}, Resources: []string{"arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/denied"}},
	}}
	for _, tc := range []struct {
		action, resource string
		want             bool
	}{
		{"ssm:GetParameter", "arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/db", true},
		{"SSM:getparameter", "arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/a/b", true},
		{"ssm:GetParameter", "arn:aws:ssm:eu-west-1:1:parameter/berth/config", false},
		{"ssm:GetParameter", "arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/denied", false},
		{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:1:secret:rt", true},
		{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:1:secret:rt2", false},
		{"ssm:GetParameters", "arn:aws:ssm:eu-west-1:1:parameter/berth/secrets/db", false},
	} {
		if got := f.Allows(tc.action, tc.resource); got != tc.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", tc.action, tc.resource, got, tc.want)
		}
	}
}

// TestRoleStatements: a function given a role of its own (Role: !GetAtt
// X.Arn) is allowed what the role's inline policies allow, as in AWS.
func TestRoleStatements(t *testing.T) {
	st, err := Load("../../template.yaml", Options{Parameters: map[string]string{"ConfigParameterName": "/berth/config"}})
	if err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:ssm:" + DefaultRegion + ":" + DefaultAccountID + ":parameter/berth/config"
	for _, tc := range []struct {
		function string
		want     bool
	}{
		{"CreateWorkerFunction", true}, // its own role
		{"ReconcilerFunction", true},   // its own role
		{"ApiFunction", true},          // SAM Policies
		{"DispatcherFunction", false},  // neither
	} {
		f, ok := st.Functions[tc.function]
		if !ok {
			t.Fatalf("no function %s", tc.function)
		}
		if got := f.Allows("ssm:GetParameter", arn); got != tc.want {
			t.Errorf("%s: Allows(ssm:GetParameter, %s) = %v, want %v", tc.function, arn, got, tc.want)
		}
	}
}

// TestRolePolicies: a function with a role of its own (Role: Fn::GetAtt
// of an AWS::IAM::Role) has that role's inline statements, resolved under
// the stack's conditions, as the repository's template.yaml writes them for
// the workers and the logs function.
func TestRolePolicies(t *testing.T) {
	const param = "/prod/berth/config"
	stack, err := Load("../../template.yaml", Options{Parameters: map[string]string{"ConfigParameterName": param}})
	if err != nil {
		t.Fatal(err)
	}
	paramARN := "arn:aws:ssm:" + DefaultRegion + ":" + DefaultAccountID + ":parameter" + param
	instances := "arn:aws:dynamodb:" + DefaultRegion + ":" + DefaultAccountID + ":table/berth-instances"
	for _, tc := range []struct {
		fn, action, resource string
		want                 bool
	}{
		{"CreateWorkerFunction", "ssm:GetParameter", paramARN, true},
		{"LogsFunction", "ssm:GetParameter", paramARN, true},
		{"LogsFunction", "dynamodb:GetItem", instances, true},
		{"LogsFunction", "dynamodb:PutItem", instances, false},
		{"LogsFunction", "secretsmanager:GetSecretValue", "*", false}, // no RuntimeConfigSecretArn
	} {
		f := stack.Functions[tc.fn]
		if f == nil {
			t.Fatalf("no %s", tc.fn)
		}
		if got := f.Allows(tc.action, tc.resource); got != tc.want {
			t.Errorf("%s: Allows(%s, %s) = %v, want %v", tc.fn, tc.action, tc.resource, got, tc.want)
		}
	}
}
