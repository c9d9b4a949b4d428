package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Backup settings.
const (
	// BackupSchedule takes the daily backup at 03:00 UTC.
	BackupSchedule = "cron(0 3 * * ? *)"
	// BackupStartWindow and BackupCompletionWindow bound a backup job (minutes).
	BackupStartWindow      = 60
	BackupCompletionWindow = 480
)

// Backup holds the tables' AWS Backup plan (with Props.BackupPlan): a daily backup of the six
// tables, kept Props.BackupRetentionDays in a vault of the stack's own, which the stack keeps
// when it is deleted (as it keeps the tables), taken with a role that may back up these six
// tables only.
type Backup struct {
	constructs.Construct
	Vault     awsbackup.CfnBackupVault
	Plan      awsbackup.CfnBackupPlan
	Role      awsiam.Role
	Selection awsbackup.CfnBackupSelection
}

func newBackup(scope constructs.Construct, p Props, tables *Tables) *Backup {
	b := &Backup{Construct: constructs.NewConstruct(scope, jsii.String("Backup"))}
	name := jsii.String(*awscdk.Aws_STACK_NAME() + "-tables")
	b.Vault = awsbackup.NewCfnBackupVault(b.Construct, jsii.String("TablesBackupVault"), &awsbackup.CfnBackupVaultProps{
		BackupVaultName: name,
	})
	b.Vault.ApplyRemovalPolicy(awscdk.RemovalPolicy_RETAIN, nil)
	b.Plan = awsbackup.NewCfnBackupPlan(b.Construct, jsii.String("TablesBackupPlan"), &awsbackup.CfnBackupPlanProps{
		BackupPlan: &awsbackup.CfnBackupPlan_BackupPlanResourceTypeProperty{
			BackupPlanName: name,
			BackupPlanRule: &[]any{&awsbackup.CfnBackupPlan_BackupRuleResourceTypeProperty{
				RuleName:                jsii.String("daily"),
				TargetBackupVault:       b.Vault.Ref(),
				ScheduleExpression:      jsii.String(BackupSchedule),
				StartWindowMinutes:      jsii.Number(BackupStartWindow),
				CompletionWindowMinutes: jsii.Number(BackupCompletionWindow),
				Lifecycle: &awsbackup.CfnBackupPlan_LifecycleResourceTypeProperty{
					DeleteAfterDays: jsii.Number(p.BackupRetentionDays),
				},
			}},
		},
	})
	all := tableNames()
	var backups []*string
	for _, arn := range tables.Arns(all) {
		backups = append(backups, jsii.String(*arn+"/backup/*"))
	}
	statements := []awsiam.PolicyStatement{
		allow([]string{"dynamodb:DescribeTable", "dynamodb:CreateBackup", "dynamodb:StartAwsBackupJob", "dynamodb:ListTagsOfResource"},
			tables.Arns(all)...),
		// Expiring a backup at the end of its retention.
		allow([]string{"dynamodb:DescribeBackup", "dynamodb:DeleteBackup"}, backups...),
	}
	b.Role = awsiam.NewRole(b.Construct, jsii.String("TablesBackupRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("backup.amazonaws.com"), nil),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"Policy0": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
	b.Selection = awsbackup.NewCfnBackupSelection(b.Construct, jsii.String("TablesBackupSelection"), &awsbackup.CfnBackupSelectionProps{
		BackupPlanId: b.Plan.Ref(),
		BackupSelection: &awsbackup.CfnBackupSelection_BackupSelectionResourceTypeProperty{
			SelectionName: jsii.String("tables"),
			IamRoleArn:    b.Role.RoleArn(),
			Resources:     jsii.Strings(derefAll(tables.Arns(all))...),
		},
	})
	return b
}

// tableNames are the short names of the six tables, in dynamostore's order.
func tableNames() []string {
	var out []string
	for _, def := range dynamostore.Tables("") {
		out = append(out, def.Table)
	}
	return out
}

func derefAll(in []*string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = *s
	}
	return out
}
