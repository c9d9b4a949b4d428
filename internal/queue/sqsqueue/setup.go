package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// NewLocalClient returns a client for an SQS emulator at endpoint (tests and
// local setups): static dummy credentials and a fixed region.
func NewLocalClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// SetupOptions describe a work queue and its dead-letter queue.
type SetupOptions struct {
	// VisibilityTimeout of the work queue, in whole seconds (rounded up);
	// zero means SQS's default (30 s).
	VisibilityTimeout time.Duration
	// MaxReceiveCount is the redrive policy's maxReceiveCount: after this
	// many receives without a delete the message moves to the DLQ. Zero
	// means 5.
	MaxReceiveCount int
	// DLQSuffix names the DLQ after the work queue; "" means "-dlq".
	DLQSuffix string
}

// Pair is a work queue and its dead-letter queue.
type Pair struct {
	URL, DLQURL string
}

// CreateWithDLQ creates (or finds, CreateQueue being idempotent for equal
// attributes) the standard queue name and its dead-letter queue, with a
// RedrivePolicy from the first to the second. It is for tests and dev
// setups; the deployed queues come from the stack.
func CreateWithDLQ(ctx context.Context, client *sqs.Client, name string, opts SetupOptions) (Pair, error) {
	if opts.MaxReceiveCount <= 0 {
		opts.MaxReceiveCount = 5
	}
	if opts.DLQSuffix == "" {
		opts.DLQSuffix = "-dlq"
	}
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name + opts.DLQSuffix),
		// Dead letters are kept as long as SQS allows: someone has to look.
		Attributes: map[string]string{string(types.QueueAttributeNameMessageRetentionPeriod): "1209600"},
	})
	if err != nil {
		return Pair{}, fmt.Errorf("sqsqueue: create queue %s: %w", name+opts.DLQSuffix, err)
	}
	dlqURL := aws.ToString(dlq.QueueUrl)
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return Pair{}, fmt.Errorf("sqsqueue: ARN of %s: %w", dlqURL, err)
	}
	redrive, err := json.Marshal(map[string]any{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     opts.MaxReceiveCount,
	})
	if err != nil {
		return Pair{}, err
	}
	qattrs := map[string]string{string(types.QueueAttributeNameRedrivePolicy): string(redrive)}
	if opts.VisibilityTimeout > 0 {
		qattrs[string(types.QueueAttributeNameVisibilityTimeout)] = strconv.Itoa(int(seconds(opts.VisibilityTimeout, maxVisibilitySeconds)))
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: qattrs})
	if err != nil {
		return Pair{}, fmt.Errorf("sqsqueue: create queue %s: %w", name, err)
	}
	return Pair{URL: aws.ToString(q.QueueUrl), DLQURL: dlqURL}, nil
}

// DeletePair deletes both queues of a pair (test cleanup).
func DeletePair(ctx context.Context, client *sqs.Client, p Pair) error {
	var first error
	for _, u := range []string{p.URL, p.DLQURL} {
		if u == "" {
			continue
		}
		if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil && first == nil {
			first = fmt.Errorf("sqsqueue: delete queue %s: %w", u, err)
		}
	}
	return first
}
