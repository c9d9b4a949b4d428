package berthstack

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-io/berth/infra/cfnshape"
	"github.com/berth-io/berth/internal/testenv"
)

// samTemplate is template.yaml, seen from this package.
const samTemplate = "../../template.yaml"

// parityCases are parameter sets under which template.yaml and the CDK stack must be the same:
// the template's parameters and the stack's props have the same names, so one map sets both.
var parityCases = []struct {
	name   string
	params map[string]string
}{
	{name: "defaults"},
	{name: "external issuer, VPC, secret, alarm topic, concurrency 1, lifecycle 4, backups, logs key", params: map[string]string{
		ParamJWTIssuer:                    "https://login.example.com/",
		ParamJWTAudience:                  "cli,web",
		ParamCreateQueueMaxConcurrency:    "1",
		ParamCreateStartTimeoutSeconds:    "840",
		ParamMaxAttempts:                  "8",
		ParamSubnetIDs:                    "subnet-0a1b2c3d4e5f60718,subnet-0a1b2c3d4e5f60719",
		ParamSecurityGroupIDs:             "sg-0a1b2c3d4e5f60718",
		ParamRuntimeConfigSecretArn:       "arn:aws:secretsmanager:eu-west-1:123456789012:secret:berth-hosts-AbCdEf",
		ParamConfigParameterName:          "/prod/berth/config",
		ParamConfigVersion:                "7",
		ParamAlarmTopicARN:                "arn:aws:sns:eu-west-1:123456789012:ops",
		ParamLifecycleQueueMaxConcurrency: "4",
		ParamBackupPlan:                   "true",
		ParamBackupRetentionDays:          "90",
		ParamLogsKmsKeyArn:                "arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		ParamDeletionProtection:           "false",
		ParamLogRetentionDays:             "7",
		ParamTablePrefix:                  "prod-",
		ParamSecretsParameterPath:         "/prod/berth/secrets/",
		ParamEventBusName:                 "berth-events",
		ParamReconcileSchedule:            "rate(2 minutes)",
		ParamAllowedRuntimes:              "docker,kubernetes",
		ParamEksClusterArns:               "arn:aws:eks:eu-west-1:123456789012:cluster/apps,arn:aws:eks:eu-west-1:123456789012:cluster/batch",
		ParamEcrRepositoryArns:            "arn:aws:ecr:eu-west-1:123456789012:repository/app,arn:aws:ecr:eu-west-1:123456789012:repository/tools",
	}},
	{name: "prod: MFA required, threat protection enforced, backups", params: map[string]string{
		ParamUserPoolMfa:              "ON",
		ParamUserPoolThreatProtection: "ENFORCED",
		ParamBackupPlan:               "true",
	}},
	{name: "no reserved concurrency, concurrency 5, the stack's logs key", params: map[string]string{
		ParamUseReservedConcurrency:    "false",
		ParamCreateQueueMaxConcurrency: "5",
		ParamCreateLogsKmsKey:          "true",
	}},
	{name: "no watcher", params: map[string]string{ParamRuntimeWatcher: "false"}},
	{name: "one shard: the loops reserve", params: map[string]string{ParamFleetShards: "1"}},
	{name: "8 shards, no watcher", params: map[string]string{ParamFleetShards: "8", ParamRuntimeWatcher: "false"}},
}

// TestParityWithSAM: the CDK stack and template.yaml (through the SAM transform, as
// CloudFormation runs it) have the same resources, property for property, for each parameter
// set; and the logs and exec functions' invoke permissions the same SourceArns
// (checkLogsPermission, checkExecPermission).
func TestParityWithSAM(t *testing.T) {
	sam := samTransform(t)
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := cfnshape.Resolve(sam, tc.params)
			if err != nil {
				t.Fatalf("template.yaml: %v", err)
			}
			props, err := LoadProps(lookupOf(tc.params))
			if err != nil {
				t.Fatalf("props: %v", err)
			}
			s := synth(t, props)
			got, err := cfnshape.Resolve(s.template, nil)
			if err != nil {
				t.Fatalf("CDK template: %v", err)
			}
			// Before Normalize, which keeps of a SourceArn only the API it names.
			checkLogsPermission(t, want, got, s.logicalID(t, s.stack.Logs.Function))
			checkExecPermission(t, want, got, s.logicalID(t, s.stack.Exec.Function))
			cfnshape.Normalize(want)
			cfnshape.Normalize(got)
			t.Logf("template.yaml: %s", cfnshape.Summary(want))
			if diffs := cfnshape.Compare(want, got, "template.yaml", "the CDK stack"); len(diffs) > 0 {
				t.Errorf("the CDK stack differs from template.yaml (%d differences):\n  %s", len(diffs), strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestParametersAreProps: every template parameter can be set on the CDK app under its name,
// and the app has no setting the template lacks.
func TestParametersAreProps(t *testing.T) {
	var inTemplate []string
	for name := range samTransform(t)["Parameters"].(map[string]any) {
		inTemplate = append(inTemplate, name)
	}
	slices.Sort(inTemplate)
	props := ParamNames()
	slices.Sort(props)
	if !slices.Equal(inTemplate, props) {
		t.Errorf("template.yaml's parameters %v, the CDK app's settings %v", inTemplate, props)
	}
}

// samTransformed caches the transform for the tests that share it (it takes seconds).
var samTransformed map[string]any

// samTransform runs testdata/sam_transform.py on template.yaml and returns the plain
// CloudFormation template.
func samTransform(t *testing.T) map[string]any {
	t.Helper()
	if samTransformed != nil {
		return samTransformed
	}
	if _, err := os.Stat(samTemplate); err != nil {
		testenv.Missing(t, "template.yaml", err.Error())
	}
	python := pythonWithSAM(t)
	cmd := exec.Command(python, filepath.Join("testdata", "sam_transform.py"), samTemplate)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform of template.yaml: %v\n%s", err, stderr.String())
	}
	var tpl map[string]any
	if err := json.Unmarshal(out, &tpl); err != nil {
		t.Fatalf("SAM transform output: %v", err)
	}
	samTransformed = tpl
	return tpl
}

// pythonWithSAM is a python3 that has aws-sam-translator and cfn-lint (their YAML loader), as
// the machines' image ships beside cfn-lint.
func pythonWithSAM(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3 with aws-sam-translator", err.Error())
	}
	if out, err := exec.Command(python, "-c", "import samtranslator, cfnlint").CombinedOutput(); err != nil {
		testenv.Missing(t, "aws-sam-translator and cfn-lint for python3", strings.TrimSpace(string(out)))
	}
	return python
}
