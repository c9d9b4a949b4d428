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
