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

// TestRoleStatements: a function whose Role is a role the template writes
// out has that role's inline policies as its statements, conditions
// resolved, as AWS would apply them.
func TestRoleStatements(t *testing.T) {
	const tpl = `
Parameters:
  Secret: {Type: String, Default: ""}
Conditions:
  HasSecret: !Not [!Equals [!Ref Secret, ""]]
Resources:
  FnRole:
    Type: AWS::IAM::Role
    Properties:
      Policies:
        - PolicyName: P0
          PolicyDocument:
            Statement:
              - {Effect: Allow, Action: [ssm:GetParameter], Resource: !Sub "arn:aws:ssm:${AWS::Region}:${AWS::AccountId}:parameter/cfg"}
        - !If
          - HasSecret
          - PolicyName: P1
            PolicyDocument:
              Statement:
                - {Effect: Allow, Action: secretsmanager:GetSecretValue, Resource: !Ref Secret}
          - !Ref AWS::NoValue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Role: !GetAtt FnRole.Arn
`
	for _, tc := range []struct {
		secret     string
		wantSecret bool
	}{{"", false}, {"arn:aws:secretsmanager:eu-west-1:000000000000:secret:rt", true}} {
		s, err := Parse([]byte(tpl), Options{StackName: "st", Region: "eu-west-1", Parameters: map[string]string{"Secret": tc.secret}})
		if err != nil {
			t.Fatal(err)
		}
		fn := s.Functions["Fn"]
		if !fn.Allows("ssm:GetParameter", "arn:aws:ssm:eu-west-1:000000000000:parameter/cfg") {
			t.Errorf("secret %q: the role's first policy is not read: %+v", tc.secret, fn.Statements)
		}
		if got := fn.Allows("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:000000000000:secret:rt"); got != tc.wantSecret {
			t.Errorf("secret %q: GetSecretValue allowed = %v, want %v: %+v", tc.secret, got, tc.wantSecret, fn.Statements)
		}
	}
}
