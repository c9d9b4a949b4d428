package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Notify holds the notify function, the notify queue's consumer: webhook deliveries and the
// status changes put on the event bus, away from the lifecycle worker, so that a receiver that
// is slow or down holds only deliveries.
type Notify struct {
	constructs.Construct
	Function awslambda.Function
	Mapping  awslambda.CfnEventSourceMapping
}

func newNotify(scope constructs.Construct, p Props, common map[string]*string, tables *Tables, pl *Pipeline) (*Notify, error) {
	n := &Notify{Construct: constructs.NewConstruct(scope, jsii.String("Notify"))}
	q := pl.Notify.Queue
	fn, err := newFunction(n.Construct, p, common, functionSpec{
		id: "NotifyFunction", binary: "notify",
		description: "berth notify (webhook and event-bus deliveries, one per invocation)",
		timeout:     NotifyTimeout,
		// In the deployment's subnets, as the workers: receivers the deployer allowed
		// (webhooks.allowed_networks) may be private; public ones are reached through the
		// subnets' egress.
		inVPC: true,
		env:   merge(notifyQueueEnv(pl), configEnv(p)),
		// What delivering needs, and nothing of a worker's: no runtime secret, no template
		// secret, no ECR, no EKS.
		statements: append([]awsiam.PolicyStatement{
			// It marks the delivery's outbox item, reads the subscriptions (the counters
			// table's webhooks item) and takes and gives back the leases bounding an
			// owner's deliveries in flight there (webhook.StoreLimiter).
			allow([]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, tables.Table(dynamostore.TableOutbox).AttrArn()),
			allow([]string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}, tables.Table(dynamostore.TableCounters).AttrArn()),
			// The mapping consumes with the function's role.
			allow([]string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"}, q.QueueArn()),
			// A failed attempt is re-sent as a fresh delayed message, so that retries spend
			// none of the queue's receives.
			allow([]string{"sqs:SendMessage"}, q.QueueArn()),
			// The only function that puts the status changes on the bus.
			eventBusStatement(p),
		}, configStatements(p)...),
	})
	if err != nil {
		return nil, err
	}
	n.Function = fn
	n.Mapping = awslambda.NewCfnEventSourceMapping(n.Construct, jsii.String("Deliveries"), &awslambda.CfnEventSourceMappingProps{
		FunctionName:          fn.FunctionName(),
		EventSourceArn:        q.QueueArn(),
		BatchSize:             jsii.Number(NotifyBatchSize),
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
		ScalingConfig: &awslambda.CfnEventSourceMapping_ScalingConfigProperty{
			MaximumConcurrency: jsii.Number(NotifyMaxConcurrency),
		},
	})
	return n, nil
}

// eventBusStatement lets a function put events on the deployment's bus, and no other.
func eventBusStatement(p Props) awsiam.PolicyStatement {
	return allow([]string{"events:PutEvents"}, jsii.String("arn:"+*awscdk.Aws_PARTITION()+":events:"+*awscdk.Aws_REGION()+":"+
		*awscdk.Aws_ACCOUNT_ID()+":event-bus/"+p.EventBusName))
}
