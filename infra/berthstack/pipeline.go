package berthstack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Queue is a work queue and the dead-letter queue its messages go to after MaxAttempts
// receives.
type Queue struct {
	Queue      awssqs.Queue
	DeadLetter awssqs.Queue
}

// Pipeline holds what carries an outbox item to a worker: the outbox stream's mapping, the
// dispatcher, the create and lifecycle queues with their dead letters, and the queue that
// receives stream records the dispatcher gave up on.
type Pipeline struct {
	constructs.Construct
	Create          Queue
	Lifecycle       Queue
	DispatchFailure awssqs.Queue
	Dispatcher      awslambda.Function
}

// newQueue makes a queue whose visibility timeout covers its consumer's timeout
// (VisibilityFactor ×) and whose dead-letter queue receives what maxAttempts receives did not
// finish; the worker fails the instance on that last attempt.
func newQueue(scope constructs.Construct, id string, consumerTimeout time.Duration, maxAttempts int) Queue {
	dlq := awssqs.NewQueue(scope, jsii.String(id+"DeadLetterQueue"), &awssqs.QueueProps{
		RetentionPeriod: seconds(DeadLetterRetention),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	q := awssqs.NewQueue(scope, jsii.String(id+"Queue"), &awssqs.QueueProps{
		VisibilityTimeout: seconds(VisibilityFactor * consumerTimeout),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(maxAttempts)},
	})
	return Queue{Queue: q, DeadLetter: dlq}
}

func newPipeline(scope constructs.Construct, p Props, tables *Tables) (*Pipeline, error) {
	pl := &Pipeline{Construct: constructs.NewConstruct(scope, jsii.String("Pipeline"))}
	pl.Create = newQueue(pl.Construct, "Create", CreateWorkerTimeout(), p.MaxAttempts)
	pl.Lifecycle = newQueue(pl.Construct, "Lifecycle", LifecycleWorkerTimeout, p.MaxAttempts)
	pl.DispatchFailure = awssqs.NewQueue(pl.Construct, jsii.String("DispatchFailureQueue"), &awssqs.QueueProps{
		RetentionPeriod: seconds(DeadLetterRetention),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})

	fn, err := newFunction(pl.Construct, p, functionSpec{
		id: "DispatcherFunction", binary: "dispatcher",
		timeout: DispatcherTimeout, memory: FunctionMemoryMB,
		env: merge(storeEnv(tables), queueEnv(pl)),
	})
	if err != nil {
		return nil, err
	}
	pl.Dispatcher = fn
	outbox := tables.Table(dynamostore.TableOutbox)
	fn.AddEventSource(awslambdaeventsources.NewDynamoEventSource(
		awsdynamodbTable(pl.Construct, "OutboxTableRef", outbox),
		&awslambdaeventsources.DynamoEventSourceProps{
			StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
			BatchSize:               jsii.Number(DispatcherBatchSize),
			BisectBatchOnError:      jsii.Bool(true),
			RetryAttempts:           jsii.Number(DispatcherMaxRetries),
			MaxRecordAge:            seconds(DispatcherMaxRecordAge),
			ReportBatchItemFailures: jsii.Bool(true),
			OnFailure:               awslambdaeventsources.NewSqsDlq(pl.DispatchFailure),
			// Only new outbox items are work; the dispatcher's own marks (MODIFY) and TTL
			// expiries (REMOVE) are not.
			Filters: &[]*map[string]any{
				awslambda.FilterCriteria_Filter(&map[string]any{
					"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT")),
				}),
			},
		}))
	// The dispatcher marks outbox items dispatched; it reads and writes nothing else.
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:UpdateItem"),
		Resources: &[]*string{outbox.AttrArn()},
	}))
	allowSend(fn, pl.Create.Queue, pl.Lifecycle.Queue)
	return pl, nil
}

// allowSend lets fn send to the queues, and nothing else on them.
func allowSend(fn awslambda.Function, queues ...awssqs.Queue) {
	var arns []*string
	for _, q := range queues {
		arns = append(arns, q.QueueArn())
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &arns,
	}))
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
