package cfnshape

import (
	"encoding/json"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("template: %v", err)
	}
	return m
}

func resolved(t *testing.T, tpl string, params map[string]string) *Resolved {
	t.Helper()
	r, err := Resolve(decode(t, tpl), params)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	Normalize(r)
	return r
}

// A SAM-like template: parameters, a condition, a mapping, Sub and Join.
const samLike = `{
 "Parameters": {
  "Prefix": {"Type": "String", "Default": "berth-"},
  "Issuer": {"Type": "String", "Default": ""},
  "Subnets": {"Type": "CommaDelimitedList", "Default": ""},
  "Start": {"Type": "String", "Default": "300"}
 },
 "Mappings": {"Timeouts": {"300": {"Worker": 360}, "840": {"Worker": 900}}},
 "Conditions": {
  "OwnPool": {"Fn::Equals": [{"Ref": "Issuer"}, ""]},
  "HasVpc": {"Fn::Not": [{"Fn::Equals": [{"Fn::Join": [",", {"Ref": "Subnets"}]}, ""]}]}
 },
 "Resources": {
  "Pool": {"Type": "AWS::Cognito::UserPool", "Condition": "OwnPool", "Properties": {"UserPoolName": {"Fn::Sub": "${AWS::StackName}-users"}}},
  "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 60}},
  "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::Sub": "/aws/lambda/${Fn}"}, "RetentionInDays": 30}},
  "Fn": {"Type": "AWS::Lambda::Function", "Properties": {
   "Timeout": {"Fn::FindInMap": ["Timeouts", {"Ref": "Start"}, "Worker"]},
   "Code": {"S3Bucket": "sam", "S3Key": "x"},
   "Environment": {"Variables": {"TABLES": {"Ref": "Prefix"}, "QUEUE": {"Ref": "Queue"}}},
   "VpcConfig": {"Fn::If": ["HasVpc", {"SubnetIds": {"Ref": "Subnets"}}, {"Ref": "AWS::NoValue"}]},
   "Role": {"Fn::GetAtt": ["Role", "Arn"]},
   "Tags": [{"Key": "lambda:createdBy", "Value": "SAM"}]
  }},
  "Role": {"Type": "AWS::IAM::Role", "Properties": {
   "ManagedPolicyArns": ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"],
   "Policies": [{"PolicyName": "p0", "PolicyDocument": {"Statement": [
    {"Sid": "Q", "Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:GetQueueAttributes"], "Resource": {"Fn::GetAtt": ["Queue", "Arn"]}}
   ]}}]
  }}
 },
 "Outputs": {"PoolId": {"Condition": "OwnPool", "Value": {"Ref": "Pool"}}, "QueueUrl": {"Value": {"Ref": "Queue"}}}
}`

// The same stack as the CDK writes it: other ids, Join instead of Sub, numbers as numbers,
// an attached policy instead of an inline one, a partition reference, its own asset.
const cdkLike = `{
 "Parameters": {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk-bootstrap/hnb659fds/version"}},
 "Resources": {
  "ApiUserPoolABC": {"Type": "AWS::Cognito::UserPool", "Properties": {"UserPoolName": {"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "-users"]]}}},
  "PipelineQueue123": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": "60"}},
  "WorkersFnLogs9": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::Join": ["", ["/aws/lambda/", {"Ref": "WorkersFn0"}]]}, "RetentionInDays": 30}},
  "WorkersFn0": {"Type": "AWS::Lambda::Function", "DependsOn": ["WorkersFnRole7"], "Properties": {
   "Timeout": 360,
   "Code": {"S3Bucket": {"Fn::Sub": "cdk-assets-${AWS::AccountId}"}, "S3Key": "abc.zip"},
   "Environment": {"Variables": {"QUEUE": {"Ref": "PipelineQueue123"}, "TABLES": "berth-"}},
   "Role": {"Fn::GetAtt": ["WorkersFnRole7", "Arn"]}
  }},
  "WorkersFnRole7": {"Type": "AWS::IAM::Role", "Properties": {
   "ManagedPolicyArns": [{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"]]}]
  }},
  "WorkersFnRoleDefaultPolicy": {"Type": "AWS::IAM::Policy", "Properties": {
   "PolicyName": "x", "Roles": [{"Ref": "WorkersFnRole7"}],
   "PolicyDocument": {"Statement": [
    {"Effect": "Allow", "Action": "sqs:GetQueueAttributes", "Resource": {"Fn::GetAtt": ["PipelineQueue123", "Arn"]}},
    {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": {"Fn::GetAtt": ["PipelineQueue123", "Arn"]}}
   ]}
  }}
 },
 "Outputs": {"PoolId": {"Value": {"Ref": "ApiUserPoolABC"}}, "QueueUrl": {"Value": {"Ref": "PipelineQueue123"}}}
}`

func TestSameShape(t *testing.T) {
	if d := Compare(resolved(t, samLike, nil), resolved(t, cdkLike, nil), "sam", "cdk"); len(d) > 0 {
		t.Errorf("same stack, differences:\n%s", strings.Join(d, "\n"))
	}
}

func TestResolveParameters(t *testing.T) {
	r := resolved(t, samLike, map[string]string{"Issuer": "https://idp", "Subnets": "subnet-1,subnet-2", "Start": "840"})
	if _, ok := r.Resources["Pool"]; ok {
		t.Error("Pool exists though its condition is false")
	}
	if len(r.Outputs) != 1 || r.Outputs[0] != "QueueUrl" {
		t.Errorf("outputs %v, want QueueUrl only", r.Outputs)
	}
	fn := r.Resources["Fn"].Body["Properties"].(map[string]any)
	if fn["Timeout"] != "900" {
		t.Errorf("Timeout = %v, want 900 from the mapping", fn["Timeout"])
	}
	if vpc := canonical(fn["VpcConfig"]); vpc != `{"SubnetIds":["subnet-1","subnet-2"]}` {
		t.Errorf("VpcConfig = %s", vpc)
	}
	def := resolved(t, samLike, nil).Resources["Fn"].Body["Properties"].(map[string]any)
	if _, ok := def["VpcConfig"]; ok {
		t.Errorf("VpcConfig %v without subnets (AWS::NoValue)", def["VpcConfig"])
	}
	if _, err := Resolve(decode(t, samLike), map[string]string{"Nope": "1"}); err == nil {
		t.Error("an unknown parameter was accepted")
	}
}

// TestDifferences: each kind of drift is reported, named by the first template's ids.
func TestDifferences(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"property", `"VisibilityTimeout": "60"`, `"VisibilityTimeout": "30"`,
			[]string{"AWS::SQS::Queue Queue (cdk: PipelineQueue123): Properties.VisibilityTimeout: want 60, got 30"}},
		{"permission", `"Action": "sqs:SendMessage"`, `"Action": "sqs:DeleteMessage"`,
			[]string{"Permissions: missing Allow sqs:SendMessage on ${<Queue>.Arn}", "Permissions: extra Allow sqs:DeleteMessage on ${<Queue>.Arn}"}},
		{"environment", `"TABLES": "berth-"`, `"TABLES": "prod-"`,
			[]string{"AWS::Lambda::Function Fn (cdk: WorkersFn0): Properties.Environment.Variables.TABLES: want berth-, got prod-"}},
		{"reference", `"LogGroupName": {"Fn::Join": ["", ["/aws/lambda/", {"Ref": "WorkersFn0"}]]}`, `"LogGroupName": {"Fn::Join": ["", ["/aws/lambda/", {"Ref": "PipelineQueue123"}]]}`,
			[]string{"Properties.LogGroupName: want /aws/lambda/${<Fn>}, got /aws/lambda/${<Queue>}"}},
		{"extra resource", `"PipelineQueue123": {`, `"Extra": {"Type": "AWS::SNS::Topic"}, "PipelineQueue123": {`,
			[]string{"AWS::SNS::Topic Extra: only in cdk"}},
		{"missing output", `"QueueUrl": {"Value": {"Ref": "PipelineQueue123"}}`, `"Other": {"Value": "x"}`,
			[]string{"output QueueUrl: only in sam", "output Other: only in cdk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := strings.Replace(cdkLike, tc.old, tc.new, 1)
			if changed == cdkLike {
				t.Fatalf("%q not in the CDK template", tc.old)
			}
			d := Compare(resolved(t, samLike, nil), resolved(t, changed, nil), "sam", "cdk")
			all := strings.Join(d, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no %q in:\n%s", w, all)
				}
			}
		})
	}
}

// TestSplitStackID: a part of the stack id taken with Fn::Select over Fn::Split resolves to
// the same text whichever way a template joins it (the user pool domain: Join in the CDK's
// output, Join or Sub in template.yaml).
func TestSplitStackID(t *testing.T) {
	part := `{"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}`
	join := resolved(t, `{"Resources": {"D": {"Type": "AWS::Cognito::UserPoolDomain", "Properties": {"Domain": {"Fn::Join": ["", ["berth-", `+part+`]]}}}}}`, nil)
	sub := resolved(t, `{"Resources": {"D": {"Type": "AWS::Cognito::UserPoolDomain", "Properties": {"Domain": {"Fn::Sub": ["berth-${Id}", {"Id": `+part+`}]}}}}}`, nil)
	got := asMap(join.Resources["D"].Body["Properties"])["Domain"]
	if got != "berth-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" {
		t.Errorf("Domain %v, want berth- and the example stack id's UUID", got)
	}
	if d := Compare(join, sub, "join", "sub"); len(d) > 0 {
		t.Errorf("Join and Sub differ: %v", d)
	}
}
