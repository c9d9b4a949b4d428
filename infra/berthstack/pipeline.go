package berthstack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Queue is a work queue and the dead-letter queue its messages go to after MaxAttempts
// receives (the worker fails the instance on that last attempt).
type Queue struct {
	Queue      awssqs.Queue
	DeadLetter awssqs.Queue
}

// Pipeline holds what carries an outbox item to a worker: the create, lifecycle and notify
// queues with their dead letters, the dispatcher on the outbox stream, and the queue that receives the
// stream records the dispatcher gave up on.
type Pipeline struct {
	constructs.Construct
	Create    Queue
	Lifecycle Queue
	// Notify carries deliveries (webhooks, the event bus) to the notify function.
	Notify        Queue
	StreamFailure awssqs.Queue
	Dispatcher    awslambda.Function
	// StreamMapping is the dispatcher's event source mapping on the outbox stream.
	StreamMapping awslambda.CfnEventSourceMapping
}

func newQueues(scope constructs.Construct, p Props) *Pipeline {
	pl := &Pipeline{Construct: constructs.NewConstruct(scope, jsii.String("Pipeline"))}
	visibility := QueueVisibility(secondsOf(p.CreateStartTimeoutSeconds))
	// Every queue refuses requests not made over TLS (EnforceSSL: a Deny on aws:SecureTransport
	// false in its queue policy), as template.yaml's *QueuePolicy resources do.
	work := func(id string, visibility time.Duration) Queue {
		dlq := awssqs.NewQueue(pl.Construct, jsii.String(id+"DeadLetterQueue"), &awssqs.QueueProps{
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: seconds(DeadLetterRetention),
		})
		q := awssqs.NewQueue(pl.Construct, jsii.String(id+"Queue"), &awssqs.QueueProps{
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			VisibilityTimeout: seconds(visibility),
			RetentionPeriod:   seconds(QueueRetention),
			DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(p.MaxAttempts)},
		})
		return Queue{Queue: q, DeadLetter: dlq}
	}
	pl.Create = work("Create", visibility)
	pl.Lifecycle = work("Lifecycle", visibility)
	pl.Notify = work("Notify", NotifyQueueVisibility)
	// The items behind a record the mapping gave up on are still pending in the outbox, and
	// the reconciler's sweep sends them: this queue is for the operator.
	pl.StreamFailure = awssqs.NewQueue(pl.Construct, jsii.String("StreamFailureQueue"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: seconds(DeadLetterRetention),
	})
	return pl
}

// addDispatcher adds the dispatcher and its mapping on the outbox stream.
func (pl *Pipeline) addDispatcher(p Props, common map[string]*string, tables *Tables) error {
	outbox := tables.Table(dynamostore.TableOutbox)
	fn, err := newFunction(pl.Construct, p, common, functionSpec{
		id: "DispatcherFunction", binary: "dispatcher",
		description: "berth outbox stream -> SQS create | lifecycle | notify queue",
		timeout:     DispatcherTimeout,
		env:         merge(queueEnv(pl), notifyQueueEnv(pl)),
		statements: []awsiam.PolicyStatement{
			// It marks outbox items dispatched, and touches nothing else in the store.
			allow([]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, outbox.AttrArn()),
			// The mapping's failure destination is sent to with the function's role.
			allow([]string{"sqs:SendMessage"}, pl.Create.Queue.QueueArn(), pl.Lifecycle.Queue.QueueArn(), pl.Notify.Queue.QueueArn(),
				pl.StreamFailure.QueueArn()),
			// The mapping reads the stream with the function's role.
			allow([]string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}, outbox.AttrStreamArn()),
			// ListStreams has no resource-level permissions: "*" is the only resource it takes.
			allow([]string{"dynamodb:ListStreams"}, jsii.String("*")),
		},
	})
	if err != nil {
		return err
	}
	pl.Dispatcher = fn
	pl.StreamMapping = awslambda.NewCfnEventSourceMapping(pl.Construct, jsii.String("OutboxStream"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:                   fn.FunctionName(),
		EventSourceArn:                 outbox.AttrStreamArn(),
		StartingPosition:               jsii.String("TRIM_HORIZON"),
		BatchSize:                      jsii.Number(DispatcherBatchSize),
		MaximumBatchingWindowInSeconds: jsii.Number(0),
		ParallelizationFactor:          jsii.Number(DispatcherParallelization),
		// Only outbox INSERTs cost an invocation: MODIFYs are the dispatcher's and workers'
		// own marks, REMOVEs are TTL.
		FilterCriteria: &awslambda.CfnEventSourceMapping_FilterCriteriaProperty{
			Filters: &[]*awslambda.CfnEventSourceMapping_FilterProperty{{Pattern: jsii.String(`{"eventName": ["INSERT"]}`)}},
		},
		FunctionResponseTypes:      jsii.Strings("ReportBatchItemFailures"),
		BisectBatchOnFunctionError: jsii.Bool(true),
		MaximumRetryAttempts:       jsii.Number(DispatcherMaxRetries),
		MaximumRecordAgeInSeconds:  jsii.Number(DispatcherMaxRecordAge.Seconds()),
		DestinationConfig: &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: pl.StreamFailure.QueueArn()},
		},
	})
	return nil
}
