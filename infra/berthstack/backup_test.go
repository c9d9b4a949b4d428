package berthstack

import (
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

// TestLogsKmsKey: with LogsKmsKeyArn every log group is encrypted with that key; without, none
// names a key.
func TestLogsKmsKey(t *testing.T) {
	const key = "arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
	for _, want := range []string{"", key} {
		s := synth(t, withProps(func(p *Props) { p.LogsKmsKeyArn = want }))
		groups := s.ofType("AWS::Logs::LogGroup")
		if len(groups) != 9 {
			t.Errorf("%d log groups, want 9 (eight functions and the API's access log)", len(groups))
		}
		for id, g := range groups {
			if got, _ := g["KmsKeyId"].(string); got != want {
				t.Errorf("key %q: log group %s has KmsKeyId %v", want, id, g["KmsKeyId"])
			}
		}
	}
}
