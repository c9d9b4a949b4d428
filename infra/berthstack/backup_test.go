package berthstack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBackupPlan: with BackupPlan, a daily backup of the six tables kept BackupRetentionDays,
// in a vault the stack keeps, by a role that may back up those tables only; without, none of
// it.
func TestBackupPlan(t *testing.T) {
	if s := synth(t, DefaultProps()); s.stack.Backup != nil || len(s.ofType("AWS::Backup::BackupPlan")) != 0 {
		t.Errorf("a backup plan by default (BackupPlan is opt-in)")
	}
	s := synth(t, withProps(func(p *Props) { p.BackupPlan, p.BackupRetentionDays = true, 90 }))
	b := s.stack.Backup
	vault := s.logicalID(t, b.Vault)
	if dp := s.resource(t, vault)["DeletionPolicy"]; dp != "Retain" {
		t.Errorf("vault DeletionPolicy %v, want Retain", dp)
	}
	s.has(t, "AWS::Backup::BackupPlan", map[string]any{"BackupPlan": map[string]any{"BackupPlanRule": []any{map[string]any{
		"RuleName": "daily", "ScheduleExpression": BackupSchedule, "TargetBackupVault": ref(vault),
		"Lifecycle": map[string]any{"DeleteAfterDays": 90},
	}}}})
	var tables []any
	for _, tb := range s.stack.Tables.All() {
		tables = append(tables, getAtt(s.logicalID(t, tb), "Arn"))
	}
	if len(tables) != 6 {
		t.Fatalf("%d tables", len(tables))
	}
	s.has(t, "AWS::Backup::BackupSelection", map[string]any{
		"BackupPlanId": ref(s.logicalID(t, b.Plan)),
		"BackupSelection": map[string]any{
			"Resources": tables, "IamRoleArn": getAtt(s.logicalID(t, b.Role), "Arn"),
		},
	})
	role := s.props(t, s.logicalID(t, b.Role))
	if got := fmt.Sprint(role["AssumeRolePolicyDocument"]); !strings.Contains(got, "backup.amazonaws.com") {
		t.Errorf("backup role trusts %s", got)
	}
	if role["ManagedPolicyArns"] != nil {
		t.Errorf("backup role has managed policies %v: want its own statements only", role["ManagedPolicyArns"])
	}
}

// TestLogsKmsKey: with LogsKmsKeyArn every log group is encrypted with that key; with
// CreateLogsKmsKey (and no ARN) with a key of the stack's own that CloudWatch Logs of the region
// may use; without either, none names a key.
func TestLogsKmsKey(t *testing.T) {
	const key = "arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
	for _, tc := range []struct {
		arn    string
		create bool
	}{{"", false}, {key, false}, {key, true}, {"", true}} {
		s := synth(t, withProps(func(p *Props) { p.LogsKmsKeyArn, p.CreateLogsKmsKey = tc.arn, tc.create }))
		var want any
		switch {
		case tc.arn != "":
			want = tc.arn
		case tc.create:
			if s.stack.LogsKey == nil {
				t.Fatal("CreateLogsKmsKey made no key")
			}
			id := s.logicalID(t, s.stack.LogsKey)
			want = getAtt(id, "Arn")
			kp, _ := json.Marshal(s.props(t, id)["KeyPolicy"])
			if !strings.Contains(string(kp), `"logs.",{"Ref":"AWS::Region"},".amazonaws.com"`) ||
				!strings.Contains(string(kp), "kms:EncryptionContext:aws:logs:arn") || s.props(t, id)["EnableKeyRotation"] != true {
				t.Errorf("logs key policy %s: want logs.<region>.amazonaws.com allowed for this account's log groups, rotation on", kp)
			}
		}
		if tc.arn != "" && s.stack.LogsKey != nil {
			t.Errorf("a logs key made beside LogsKmsKeyArn")
		}
		groups := s.ofType("AWS::Logs::LogGroup")
		if len(groups) != 10 {
			t.Errorf("%d log groups, want 10 (nine functions and the API's access log)", len(groups))
		}
		for id, g := range groups {
			if fmt.Sprint(g["KmsKeyId"]) != fmt.Sprint(want) {
				t.Errorf("%+v: log group %s has KmsKeyId %v, want %v", tc, id, g["KmsKeyId"], want)
			}
		}
	}
}
