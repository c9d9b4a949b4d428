package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// logsKeyActions are what CloudWatch Logs does with a log group's key.
var logsKeyActions = []string{"kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"}

// newLogsKey decides the log groups' key: Props.LogsKmsKeyArn, or with Props.CreateLogsKmsKey
// a key the stack makes (rotated yearly) that CloudWatch Logs of the stack's region may use
// for this account's log groups only; nil for CloudWatch Logs' own encryption. The key it
// made, if any, is returned too.
func newLogsKey(scope constructs.Construct, p Props) (*string, awskms.CfnKey) {
	if p.LogsKmsKeyArn != "" {
		return jsii.String(p.LogsKmsKeyArn), nil
	}
	if !p.CreateLogsKmsKey {
		return nil, nil
	}
	partition, region, account := *awscdk.Aws_PARTITION(), *awscdk.Aws_REGION(), *awscdk.Aws_ACCOUNT_ID()
	key := awskms.NewCfnKey(scope, jsii.String("LogsKey"), &awskms.CfnKeyProps{
		Description:       jsii.String("berth log groups: CloudWatch Logs encrypts the stack's logs"),
		EnableKeyRotation: jsii.Bool(true),
		KeyPolicy: serviceKeyPolicy("CloudWatchLogs", jsii.String("logs."+region+".amazonaws.com"), logsKeyActions,
			map[string]any{"ArnLike": map[string]any{
				"kms:EncryptionContext:aws:logs:arn": "arn:" + partition + ":logs:" + region + ":" + account + ":log-group:*",
			}}),
	})
	return key.AttrArn(), key
}
