package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// NagSuppression is one cdk-nag finding the stack keeps on purpose, and why. AppliesTo, when
// set, narrows it to the findings of a rule about those policies or resources (ECMA-262
// regular expressions over cdk-nag's "Policy::…" / "Resource::…" names).
type NagSuppression struct {
	ID, Reason string
	AppliesTo  []string
}

// stackNagSuppressions are the AwsSolutions findings kept across the whole stack.
var stackNagSuppressions = []NagSuppression{
	{ID: "AwsSolutions-IAM4", AppliesTo: []string{
		`^Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole$`,
		`^Policy::arn:<AWS::Partition>:iam::aws:policy/AWSXrayWriteOnlyAccess$`,
		`^Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole$`,
	}, Reason: "AWS's own narrow policies for a Lambda function's logs, X-Ray segments and VPC network interfaces " +
		"(the last only on the functions in a VPC, when SubnetIds is set), as template.yaml's roles have them; " +
		"a copy would only fall behind them"},
	{ID: "AwsSolutions-IAM5", AppliesTo: []string{`^Resource::<Tables[A-Za-z0-9]+\.Arn>/index/\*$`},
		Reason: "the indexes of one berth table (by_owner, by_status_key, undispatched), named by its ARN: DynamoDB " +
			"grants queries per index ARN and the set of indexes is the table's own"},
	{ID: "AwsSolutions-IAM5", AppliesTo: []string{`^Resource::<Tables[A-Za-z0-9]+\.Arn>/backup/\*$`},
		Reason: "AWS Backup's role deletes the backups of one berth table when they expire: a backup's ARN is its " +
			"table's ARN, /backup/, and a name AWS Backup chooses when it takes it"},
	{ID: "AwsSolutions-IAM5", AppliesTo: []string{`^Resource::\*$`},
		Reason: "ecr:GetAuthorizationToken (the workers' pull tokens) and dynamodb:ListStreams (the stream mapping) have " +
			"no resource-level permissions: * is the only resource they accept; every other action names its resources"},
	{ID: "AwsSolutions-IAM5", AppliesTo: []string{`^Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/.*/\*$`},
		Reason: "ssm:GetParameter under the deployment's SecretsParameterPath only: templates name their secrets " +
			"(secret_env) at run time, so the workers read that folder, not a fixed list"},
	{ID: "AwsSolutions-SQS3",
		Reason: "StreamFailureQueue is itself the outbox stream mapping's on-failure destination, read by the operator " +
			"(its items stay pending in the outbox table and the reconciler's sweep sends them): a DLQ behind it would hold nothing; " +
			"the loops' shard queues (ReconcileShardQueue, WatchShardQueue) hold messages worth nothing after one period (the " +
			"next tick's covers the shard, and the function drops an older one): a DLQ would keep only stale ones"},
	// cdk-nag's Serverless pack.
	{ID: "Serverless-SQSRedrivePolicy",
		Reason: "the queues without a redrive policy are the dead-letter queues themselves (create, lifecycle, notify) and " +
			"StreamFailureQueue, the stream mapping's on-failure destination: each is alarmed and read by the operator; and the " +
			"loops' shard queues, whose messages are worth nothing after one period (kept two, then gone)"},
	{ID: "Serverless-LambdaDLQ",
		Reason: "no function has an asynchronous invocation that a DLQ would keep: the api and logs functions are called " +
			"synchronously by API Gateway; the workers and notify consume SQS (a failing message goes to its queue's " +
			"dead-letter queue after MaxAttempts); the dispatcher's failed stream records go to StreamFailureQueue; a " +
			"reconciler or watcher tick that fails is superseded by the next one a period later (0 retries, 60 s age)"},
	{ID: "Serverless-LambdaAsyncFailureDestination",
		Reason: "the reconciler's and the watcher's asynchronous invocations are schedule ticks: a failed one is superseded " +
			"by the next tick a period later, and failures raise ReconcilerErrorsAlarm / WatcherErrorsAlarm; a destination " +
			"would only keep copies of the schedule's constant input"},
	{ID: "Serverless-LambdaEventSourceMappingDestination",
		Reason: "the create, lifecycle and notify mappings read SQS, whose mappings take no on-failure destination: a " +
			"message that fails MaxAttempts times moves to its queue's dead-letter queue (redrive policy), which is alarmed; " +
			"the stream mapping has StreamFailureQueue as its destination; a shard queue's failed record is retried within " +
			"its period and then superseded by the next tick's message for its shard"},
}

// starRoleNagSuppressions are kept on the roles of the functions that need an action with no
// resource-level permissions (the dispatcher's dynamodb:ListStreams, the workers'
// ecr:GetAuthorizationToken); AwsSolutions-IAM5 keeps them with the same reason, and
// template_test.go's TestTemplateLeastPrivilege allows "*" for those actions only.
var starRoleNagSuppressions = []NagSuppression{
	{ID: "Serverless-LambdaStarPermissions",
		Reason: "dynamodb:ListStreams (the stream mapping) and ecr:GetAuthorizationToken (the workers' pull tokens) have " +
			"no resource-level permissions: * is the only resource they accept; every other action names its resources"},
}

// NagSuppressions records on s the AwsSolutions findings berth keeps on purpose, each with its
// reason: the stack-wide ones above, the open routes (the OpenAPI document, the two probes, the console)
// and, for the stack's Cognito pool, MFA when p does not require it and the Plus feature plan
// when p leaves threat protection off.
// infra's tests run cdk-nag over stacks with these and fail on any finding left.
func NagSuppressions(s *Stack, p Props) {
	add := func(c constructs.IConstruct, list []NagSuppression) {
		var out []*cdknag.NagPackSuppression
		for _, n := range list {
			sup := &cdknag.NagPackSuppression{Id: jsii.String(n.ID), Reason: jsii.String(n.Reason)}
			if len(n.AppliesTo) > 0 {
				var to []any
				for _, re := range n.AppliesTo {
					to = append(to, &cdknag.RegexAppliesTo{Regex: jsii.String("/" + re + "/")})
				}
				sup.AppliesTo = &to
			}
			out = append(out, sup)
		}
		cdknag.NagSuppressions_AddResourceSuppressions(c, &out, jsii.Bool(true))
	}
	add(s.Stack, stackNagSuppressions)
	for _, fn := range []awslambda.Function{s.Pipeline.Dispatcher, s.Workers.Create, s.Workers.Lifecycle} {
		add(roleOf(fn), starRoleNagSuppressions)
	}
	for _, c := range *s.API.HTTPAPI.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if r, ok := c.(awsapigatewayv2.CfnRoute); ok && r.AuthorizationType() != nil && *r.AuthorizationType() == "NONE" {
			add(r, []NagSuppression{{ID: "AwsSolutions-APIG4",
				Reason: "open on purpose (docs/api.md): the OpenAPI document, the /livez and /readyz probes and the web " +
					"console's static files say nothing about users; every other route has the JWT authorizer"}})
		}
	}
	if s.API.UserPool == nil {
		return
	}
	var pool []NagSuppression
	if p.UserPoolThreatProtection == "OFF" {
		pool = append(pool, NagSuppression{ID: "AwsSolutions-COG8",
			Reason: "threat protection needs the Plus feature plan, billed per monthly active user: off by default, " +
				"UserPoolThreatProtection=AUDIT or ENFORCED turns it on (ENFORCED in samconfig.toml's prod)"})
	}
	if p.UserPoolMfa != "ON" {
		pool = append(pool, NagSuppression{ID: "AwsSolutions-COG2",
			Reason: "MFA is offered to every user (OPTIONAL, authenticator apps) so that a first admin can sign in with " +
				"the CLI's password flow; UserPoolMfa=ON requires it (prod in samconfig.toml)"})
	}
	if len(pool) > 0 {
		add(s.API.UserPool, pool)
	}
}

// roleOf is the role newFunction made for fn: its sibling <id>Role.
func roleOf(fn awslambda.Function) constructs.IConstruct {
	return fn.Node().Scope().Node().FindChild(jsii.String(*fn.Node().Id() + "Role"))
}
