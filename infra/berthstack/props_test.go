package berthstack

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
)

func lookupOf(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestDefaultProps: the defaults are berth's configuration defaults, and valid.
func TestDefaultProps(t *testing.T) {
	p, err := LoadProps(lookupOf(nil))
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c := config.Default()
	if p.CreateQueueMaxConcurrency != c.Container.CreateQueueMaxConcurrency || p.MaxAttempts != c.Container.MaxAttempts ||
		p.TablePrefix != c.Store.TablePrefix || p.AdminGroup != c.Auth.AdminGroup ||
		secondsOf(p.CreateStartTimeoutSeconds) != c.Container.CreateStartTimeout || p.JWTIssuer != "" || !p.DeletionProtection {
		t.Errorf("defaults %+v differ from config's", p)
	}
}

func TestLoadProps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		check   func(Props) bool
		wantErr string
	}{
		{name: "lists and numbers", in: map[string]string{
			ParamJWTIssuer: "https://idp.example.com", ParamJWTAudience: " a, b ,", ParamCreateQueueMaxConcurrency: "7",
			ParamSubnetIDs: "subnet-1,subnet-2", ParamSecurityGroupIDs: "sg-0a1b2c3d4e5f60718", ParamDeletionProtection: "false",
		}, check: func(p Props) bool {
			return p.JWTIssuer == "https://idp.example.com" && len(p.JWTAudience) == 2 && p.JWTAudience[1] == "b" &&
				p.CreateQueueMaxConcurrency == 7 && len(p.SubnetIDs) == 2 && !p.DeletionProtection
		}},
		{name: "no reserved concurrency", in: map[string]string{ParamUseReservedConcurrency: "false"}, check: func(p Props) bool {
			return !p.UseReservedConcurrency && DefaultProps().UseReservedConcurrency
		}},
		{name: "mfa", in: map[string]string{ParamUserPoolMfa: "REQUIRED"}, wantErr: "UserPoolMfa: \"REQUIRED\" is not one of"},
		{name: "threat protection", in: map[string]string{ParamUserPoolThreatProtection: "ON"}, wantErr: "UserPoolThreatProtection: \"ON\" is not one of"},
		{name: "not a number", in: map[string]string{ParamMaxAttempts: "five"}, wantErr: "MaxAttempts: \"five\" is not a whole number"},
		{name: "not a bool", in: map[string]string{ParamDeletionProtection: "yes please"}, wantErr: "DeletionProtection"},
		{name: "concurrency 0", in: map[string]string{ParamCreateQueueMaxConcurrency: "0"}, wantErr: "CreateQueueMaxConcurrency: 0 is outside 1..1000"},
		{name: "issuer without audience", in: map[string]string{ParamJWTIssuer: "https://idp.example.com"}, wantErr: "JwtAudience: required"},
		{name: "http issuer", in: map[string]string{ParamJWTIssuer: "http://idp", ParamJWTAudience: "a"}, wantErr: "not an https URL"},
		{name: "start timeout", in: map[string]string{ParamCreateStartTimeoutSeconds: "900"}, wantErr: "CreateStartTimeoutSeconds: 900 is not one of"},
		{name: "schedule", in: map[string]string{ParamReconcileSchedule: "every minute"}, wantErr: "ReconcileSchedule"},
		{name: "subnets without groups", in: map[string]string{ParamSubnetIDs: "subnet-1"}, wantErr: "SecurityGroupIds: required"},
		{name: "retention", in: map[string]string{ParamLogRetentionDays: "31"}, wantErr: "LogRetentionDays: 31"},
		{name: "prefix", in: map[string]string{ParamTablePrefix: "bad prefix/"}, wantErr: "TablePrefix"},
		{name: "runtimes", in: map[string]string{ParamAllowedRuntimes: "podman"}, wantErr: "AllowedRuntimes"},
		{name: "topic", in: map[string]string{ParamAlarmTopicARN: "ops"}, wantErr: "AlarmTopicArn"},
		{name: "fleet shards", in: map[string]string{ParamFleetShards: "12"}, check: func(p Props) bool {
			return p.FleetShards == 12 && DefaultProps().FleetShards == 0
		}},
		{name: "fleet shards past the buckets", in: map[string]string{ParamFleetShards: "1025"}, wantErr: "FleetShards: 1025 is outside 0..1024"},
		{name: "fleet shards negative", in: map[string]string{ParamFleetShards: "-1"}, wantErr: "FleetShards: -1 is outside 0..1024"},
		{name: "all errors at once", in: map[string]string{ParamMaxAttempts: "0", ParamStopGracePeriodSeconds: "61"}, wantErr: "StopGracePeriodSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadProps(lookupOf(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(p) {
				t.Errorf("props %+v", p)
			}
		})
	}
}

// TestContextOrEnv: a context value wins; otherwise BERTH_CDK_<NAME> from the environment.
func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		ParamCreateQueueMaxConcurrency: "BERTH_CDK_CREATE_QUEUE_MAX_CONCURRENCY",
		ParamJWTIssuer:                 "BERTH_CDK_JWT_ISSUER",
		ParamSubnetIDs:                 "BERTH_CDK_SUBNET_IDS",
		ParamAlarmTopicARN:             "BERTH_CDK_ALARM_TOPIC_ARN",
		ContextStackName:               "BERTH_CDK_STACK_NAME",
	} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestContextOrEnv(t *testing.T) {
	jsiiDo(t, "context", func() {
		app := awscdkApp(t)
		app.Node().SetContext(strPtr(ParamMaxAttempts), "9")
		app.Node().SetContext(strPtr(ParamSubnetIDs), []any{"subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"})
		app.Node().SetContext(strPtr(ParamSecurityGroupIDs), "sg-0a1b2c3d4e5f60718")
		env := lookupOf(map[string]string{EnvName(ParamMaxAttempts): "3", EnvName(ParamOrphanGraceSeconds): "60"})
		p, err := LoadProps(ContextOrEnv(app.Node(), env))
		if err != nil {
			t.Fatal(err)
		}
		if p.MaxAttempts != 9 || p.OrphanGraceSeconds != 60 || len(p.SubnetIDs) != 2 {
			t.Errorf("MaxAttempts %d (want 9 from context), OrphanGraceSeconds %d (want 60 from env), subnets %v",
				p.MaxAttempts, p.OrphanGraceSeconds, p.SubnetIDs)
		}
	})
}

func strPtr(s string) *string { return &s }
