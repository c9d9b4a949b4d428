package berthstack

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Workers holds the two queue consumers: the create worker, whose concurrency is the create
// limit, and the lifecycle worker (start, stop, delete), with their queue mappings.
type Workers struct {
	constructs.Construct
	Create           awslambda.Function
	CreateMapping    awslambda.CfnEventSourceMapping
	Lifecycle        awslambda.Function
	LifecycleMapping awslambda.CfnEventSourceMapping
}

// MinSQSMaxConcurrency is AWS's floor for an SQS mapping's maximum concurrency. With a create
// limit of 1 the mapping gets this floor and the reserved concurrency of 1 holds the limit:
// the poller may then try a second invocation, which is throttled and returns the message to
// the queue, where it waits out its visibility timeout and spends one receive of MaxAttempts.
// Without reserved concurrency (Props.UseReservedConcurrency off) nothing lowers it: a limit
// of 1 is then 2 creates at once (docs/deploy.md).
const MinSQSMaxConcurrency = 2

// workerTables are the tables a worker or the reconciler uses (not idempotency: only creates
// through the API record keys).
var workerTables = []string{dynamostore.TableInstances, dynamostore.TableOutbox, dynamostore.TableEvents,
	dynamostore.TableTemplates, dynamostore.TableCounters}

// workerActions are the item operations of a worker or the reconciler: no Scan.
var workerActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:ConditionCheckItem", "dynamodb:Query"}

// ecrPullToken lets a function fetch an ECR pull token for the Docker hosts. The action has
// no resource-level permissions: "*" is the only resource it accepts.
func ecrPullToken() awsiam.PolicyStatement {
	return allow([]string{"ecr:GetAuthorizationToken"}, jsii.String("*"))
}

// secretStatements let a function read the secret with the Docker hosts, when there is one.
func secretStatements(p Props) []awsiam.PolicyStatement {
	if p.RuntimeConfigSecretArn == "" {
		return nil
	}
	return []awsiam.PolicyStatement{allow([]string{"secretsmanager:GetSecretValue"}, jsii.String(p.RuntimeConfigSecretArn))}
}

// configStatements let a function read the configuration parameter, and no other parameter,
// when there is one.
func configStatements(p Props) []awsiam.PolicyStatement {
	if p.ConfigParameterName == "" {
		return nil
	}
	return []awsiam.PolicyStatement{allow([]string{"ssm:GetParameter"}, jsii.String("arn:"+*awscdk.Aws_PARTITION()+":ssm:"+
		*awscdk.Aws_REGION()+":"+*awscdk.Aws_ACCOUNT_ID()+":parameter"+p.ConfigParameterName))}
}

// eksStatements let a function look up the named EKS clusters' endpoints and CAs, and no
// other cluster's.
func eksStatements(p Props) []awsiam.PolicyStatement {
	if len(p.EksClusterArns) == 0 {
		return nil
	}
	return []awsiam.PolicyStatement{allow([]string{"eks:DescribeCluster"}, *jsii.Strings(p.EksClusterArns...)...)}
}

// pullStatements are what a worker needs for a Docker host to pull from ECR: a token, and
// read access to the given repositories.
func pullStatements(p Props) []awsiam.PolicyStatement {
	out := []awsiam.PolicyStatement{ecrPullToken()}
	if len(p.EcrRepositoryArns) > 0 {
		out = append(out, allow([]string{"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"},
			*jsii.Strings(p.EcrRepositoryArns...)...))
	}
	return out
}

func newWorkers(scope constructs.Construct, p Props, common map[string]*string, tables *Tables, pl *Pipeline) (*Workers, error) {
	w := &Workers{Construct: constructs.NewConstruct(scope, jsii.String("Workers"))}
	storeStatement := allow(workerActions, tables.Arns(workerTables, dynamostore.TableInstances)...)
	worker := func(id, description string, q awssqs.Queue, reserved int, more ...awsiam.PolicyStatement) (awslambda.Function, error) {
		return newFunction(w.Construct, p, common, functionSpec{
			id: id, binary: "worker", description: description,
			// A start waits for stability like a create does: both workers wait as long.
			timeout:  WorkerTimeout(secondsOf(p.CreateStartTimeoutSeconds)),
			reserved: reserved,
			inVPC:    true,
			env:      merge(queueEnv(pl), runtimeEnv(p), configEnv(p), templateSecretsEnv(p)),
			statements: slices.Concat([]awsiam.PolicyStatement{
				storeStatement,
				// The mapping consumes with the function's role; a failed operation's retry
				// delay is set on its message.
				allow([]string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"}, q.QueueArn()),
				// Templates' secret_env values, under the deployment's path only.
				allow([]string{"ssm:GetParameter"}, jsii.String("arn:"+*awscdk.Aws_PARTITION()+":ssm:"+*awscdk.Aws_REGION()+":"+
					*awscdk.Aws_ACCOUNT_ID()+":parameter"+p.SecretsParameterPath+"*")),
			}, pullStatements(p), configStatements(p), secretStatements(p), eksStatements(p), more),
		})
	}
	var err error
	// The create limit: never more invocations than slots. Each invocation holds its slot
	// until the container is stable or create_start_timeout passes. Without the reservation
	// the mapping's maximum concurrency below holds it.
	reserved := 0
	if p.UseReservedConcurrency {
		reserved = p.CreateQueueMaxConcurrency
	}
	if w.Create, err = worker("CreateWorkerFunction", "berth create worker (one create per invocation; the invocation is the slot)",
		pl.Create.Queue, reserved); err != nil {
		return nil, err
	}
	w.CreateMapping = awslambda.NewCfnEventSourceMapping(w.Construct, jsii.String("Creates"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:          w.Create.FunctionName(),
		EventSourceArn:        pl.Create.Queue.QueueArn(),
		BatchSize:             jsii.Number(1),
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
		// The poller never invokes past the reserved concurrency, so a create is not
		// throttled back to the queue (spending an attempt) while the slots are full; without
		// a reservation this is the create limit.
		ScalingConfig: &awslambda.CfnEventSourceMapping_ScalingConfigProperty{
			MaximumConcurrency: jsii.Number(max(p.CreateQueueMaxConcurrency, MinSQSMaxConcurrency)),
		},
	})

	if w.Lifecycle, err = worker("LifecycleWorkerFunction", "berth lifecycle worker (start, stop, delete)", pl.Lifecycle.Queue, 0); err != nil {
		return nil, err
	}
	w.LifecycleMapping = awslambda.NewCfnEventSourceMapping(w.Construct, jsii.String("Lifecycle"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:          w.Lifecycle.FunctionName(),
		EventSourceArn:        pl.Lifecycle.Queue.QueueArn(),
		BatchSize:             jsii.Number(LifecycleBatchSize),
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
		// Starts, stops and deletes draw on the account's unreserved concurrency with the api
		// function: the cap keeps a burst of them from taking it all (and from being
		// throttled, each throttle spending a receive of MaxAttempts).
		ScalingConfig: &awslambda.CfnEventSourceMapping_ScalingConfigProperty{
			MaximumConcurrency: jsii.Number(p.LifecycleQueueMaxConcurrency),
		},
	})
	return w, nil
}
