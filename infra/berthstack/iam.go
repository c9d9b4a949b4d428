package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// storeActions are the item operations internal/store/dynamostore makes; a transaction's
// items are authorized as these same actions.
var storeActions = []string{
	"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:Scan",
}

// allowStore lets fn use the store: item operations on the tables and their indexes, no table
// management.
func allowStore(fn awslambda.Function, t *Tables) {
	var arns []*string
	for _, table := range t.All() {
		arns = append(arns, table.AttrArn(), jsii.String(*table.AttrArn()+"/index/*"))
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(storeActions...),
		Resources: &arns,
	}))
}

// allowRetryDelay lets a worker set a failed message's visibility (its retry backoff) on the
// queues it consumes.
func allowRetryDelay(fn awslambda.Function, queues ...awssqs.Queue) {
	var arns []*string
	for _, q := range queues {
		arns = append(arns, q.QueueArn())
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:ChangeMessageVisibility"),
		Resources: &arns,
	}))
}

func awsiamManagedPolicy(name string) awsiam.IManagedPolicy {
	return awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String(name))
}

// RuntimeAccess is where the functions that reach runtimes read the Docker hosts and their TLS
// material: SSM parameters and Secrets Manager secrets under the stack's name, never values
// in the template or the environment.
type RuntimeAccess struct {
	constructs.Construct
	// Path is the name prefix, /<stack name>/.
	Path *string
}

func newRuntimeAccess(scope constructs.Construct) *RuntimeAccess {
	return &RuntimeAccess{
		Construct: constructs.NewConstruct(scope, jsii.String("RuntimeAccess")),
		Path:      jsii.String("/" + *awscdk.Aws_STACK_NAME() + "/"),
	}
}

func (r *RuntimeAccess) env() map[string]*string { return map[string]*string{} }

// allowRead lets fn read the runtime parameters and secrets, and only those.
func (r *RuntimeAccess) allowRead(fn awslambda.Function) {
	stack := awscdk.Stack_Of(r.Construct)
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("ssm:GetParameter", "ssm:GetParametersByPath"),
		Resources: jsii.Strings(*stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("ssm"), Resource: jsii.String("parameter"),
			ResourceName: jsii.String(*awscdk.Aws_STACK_NAME() + "/*"),
		})),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: jsii.Strings(*stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
			ResourceName: jsii.String(*awscdk.Aws_STACK_NAME() + "/*"),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})),
	}))
}
