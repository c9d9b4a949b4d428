package berth_test

import (
	"fmt"
	"strings"
	"testing"
)

// alarmTargets is what every alarm's AlarmActions and OKActions are: the given topic, or the
// stack's own.
const alarmTargets = "[map[Fn::If:[HasAlarmTopic map[Ref:AlarmTopicArn] map[Ref:AlarmTopic]]]]"

// TestTemplateAlarmsNotify: every alarm notifies a topic, on alarm and on recovery, whatever
// AlarmTopicArn is: the one given, or the stack's own (made exactly when none is given,
// encrypted with a key of its own). The reconciler and the watcher have errors alarms that
// tolerate one failed run.
func TestTemplateAlarmsNotify(t *testing.T) {
	c := loadTemplate(t)
	alarms := c.resourcesOf("AWS::CloudWatch::Alarm")
	if len(alarms) != 10 {
		t.Errorf("%d alarms, want 10", len(alarms))
	}
	for name, a := range alarms {
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if got := fmt.Sprint(a[k]); got != alarmTargets {
				t.Errorf("%s %s %s, want %s", name, k, got, alarmTargets)
			}
		}
	}
	conds := asMap(c.doc["Conditions"])
	if fmt.Sprint(conds["CreateAlarmTopic"]) != "map[Fn::Equals:[map[Ref:AlarmTopicArn] ]]" ||
		fmt.Sprint(conds["HasAlarmTopic"]) != "map[Fn::Not:[map[Fn::Equals:[map[Ref:AlarmTopicArn] ]]]]" {
		t.Errorf("conditions CreateAlarmTopic %v, HasAlarmTopic %v: want AlarmTopicArn empty, and not", conds["CreateAlarmTopic"], conds["HasAlarmTopic"])
	}
	for _, r := range []struct{ name, typ string }{
		{"AlarmTopic", "AWS::SNS::Topic"}, {"AlarmTopicKey", "AWS::KMS::Key"}, {"AlarmTopicPolicy", "AWS::SNS::TopicPolicy"},
	} {
		c.resource(r.name, r.typ)
		if cond := asMap(asMap(c.doc["Resources"])[r.name])["Condition"]; cond != "CreateAlarmTopic" {
			t.Errorf("%s: condition %v, want CreateAlarmTopic", r.name, cond)
		}
	}
	if k := c.resource("AlarmTopic", "AWS::SNS::Topic")["KmsMasterKeyId"]; paramOf(k) != "AlarmTopicKey" {
		t.Errorf("AlarmTopic's key %v, want !Ref AlarmTopicKey", k)
	}
	for _, fn := range []string{"ReconcilerFunction", "WatcherFunction"} {
		found := false
		for _, a := range alarms {
			d := asList(a["Dimensions"])
			if a["MetricName"] == "Errors" && len(d) == 1 && paramOf(asMap(d[0])["Value"]) == fn {
				found = true
				if a["EvaluationPeriods"] != 3.0 || a["DatapointsToAlarm"] != 2.0 || a["Threshold"] != 0.0 {
					t.Errorf("%s's errors alarm: %v of %v periods over %v; want 2 of 3 over 0", fn, a["DatapointsToAlarm"], a["EvaluationPeriods"], a["Threshold"])
				}
			}
		}
		if !found {
			t.Errorf("no errors alarm for %s", fn)
		}
	}
}

// TestTemplateLifecycleConcurrency: the lifecycle worker's mapping is capped by
// LifecycleQueueMaxConcurrency, within AWS's range for it.
func TestTemplateLifecycleConcurrency(t *testing.T) {
	c := loadTemplate(t)
	m := c.resource("LifecycleWorkerQueueMapping", "AWS::Lambda::EventSourceMapping")
	if p := paramOf(asMap(m["ScalingConfig"])["MaximumConcurrency"]); p != "LifecycleQueueMaxConcurrency" {
		t.Errorf("LifecycleWorkerQueueMapping's MaximumConcurrency %v, want !Ref LifecycleQueueMaxConcurrency", m["ScalingConfig"])
	}
	p := c.param("LifecycleQueueMaxConcurrency")
	if p["MinValue"] != 2.0 || p["MaxValue"] != 1000.0 {
		t.Errorf("LifecycleQueueMaxConcurrency %v..%v, want SQS's 2..1000", p["MinValue"], p["MaxValue"])
	}
}

// TestTemplateBackupsAndLogKeys: with BackupPlan, a daily plan over exactly the six tables,
// kept BackupRetentionDays, by a role of its own; with LogsKmsKeyArn, every log group is
// encrypted with that key, and with CreateLogsKmsKey (and no ARN) with the stack's own, whose
// policy lets CloudWatch Logs of the region use it.
func TestTemplateBackupsAndLogKeys(t *testing.T) {
	c := loadTemplate(t)
	for name, r := range map[string]string{
		"TablesBackupVault": "AWS::Backup::BackupVault", "TablesBackupPlan": "AWS::Backup::BackupPlan",
		"TablesBackupRole": "AWS::IAM::Role", "TablesBackupSelection": "AWS::Backup::BackupSelection",
	} {
		c.resource(name, r)
		if cond := asMap(asMap(c.doc["Resources"])[name])["Condition"]; cond != "CreateBackupPlan" {
			t.Errorf("%s: condition %v, want CreateBackupPlan", name, cond)
		}
	}
	if c.condition("CreateBackupPlan") {
		t.Errorf("a backup plan by default: BackupPlan is opt-in")
	}
	rule := asMap(asList(asMap(c.resource("TablesBackupPlan", "AWS::Backup::BackupPlan")["BackupPlan"])["BackupPlanRule"])[0])
	if paramOf(asMap(rule["Lifecycle"])["DeleteAfterDays"]) != "BackupRetentionDays" || paramOf(rule["TargetBackupVault"]) != "TablesBackupVault" {
		t.Errorf("backup rule %v: want DeleteAfterDays !Ref BackupRetentionDays into TablesBackupVault", rule)
	}
	var selected []string
	for _, r := range asList(asMap(c.resource("TablesBackupSelection", "AWS::Backup::BackupSelection")["BackupSelection"])["Resources"]) {
		if a := getAtt(r); a != nil && a[1] == "Arn" {
			selected = append(selected, a[0])
		}
	}
	tables := c.resourcesOf("AWS::DynamoDB::Table")
	if len(selected) != 6 || len(tables) != 6 {
		t.Errorf("backup selection %v, want the six tables", selected)
	}
	for _, s := range selected {
		if _, ok := tables[s]; !ok {
			t.Errorf("backup selection names %s, not a table", s)
		}
	}
	groups := c.resourcesOf("AWS::Logs::LogGroup")
	for name, g := range groups {
		if got := fmt.Sprint(g["KmsKeyId"]); got != "map[Fn::If:[HasLogsKmsKey map[Ref:LogsKmsKeyArn] map[Fn::If:[CreateLogsKey map[Fn::GetAtt:LogsKey.Arn] map[Ref:AWS::NoValue]]]]]" {
			t.Errorf("log group %s: KmsKeyId %s, want !If [HasLogsKmsKey, !Ref LogsKmsKeyArn, !If [CreateLogsKey, !GetAtt LogsKey.Arn, !Ref AWS::NoValue]]", name, got)
		}
	}
	if cond := asMap(asMap(c.doc["Resources"])["LogsKey"])["Condition"]; cond != "CreateLogsKey" {
		t.Errorf("LogsKey: condition %v, want CreateLogsKey", cond)
	}
	policy := fmt.Sprint(c.resource("LogsKey", "AWS::KMS::Key")["KeyPolicy"])
	if !strings.Contains(policy, "map[Service:map[Fn::Sub:logs.${AWS::Region}.amazonaws.com]]") {
		t.Errorf("LogsKey's policy %s does not let logs.<region>.amazonaws.com use it", policy)
	}
}
