package emulate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/berth-io/berth/internal/samtemplate"
)

// service is one of the project's emulator scripts (scripts/testenv/*.sh,
// `SCRIPT up|down STATE_DIR`), started when its endpoint variable is not
// already set.
type service struct {
	name   string // dynamodb-local, sqs
	script string
	envVar string // AWS_ENDPOINT_URL_DYNAMODB …
	state  string // STATE_DIR of a started one; "" when it was given
}

// up starts the service unless env already names its endpoint, and returns
// the endpoint. Its progress goes to logw.
func (s *service) up(ctx context.Context, env map[string]string, stateRoot string, logw io.Writer) (string, error) {
	if v := env[s.envVar]; v != "" {
		return v, nil
	}
	s.state = filepath.Join(stateRoot, s.name)
	if err := os.MkdirAll(s.state, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", s.script, "up", s.state)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, logw
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s up: %w (logs in %s)", filepath.Base(s.script), err, s.state)
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		name, val, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if ok && strings.HasPrefix(sc.Text(), "export ") {
			if _, set := env[name]; !set || name == s.envVar {
				env[name] = strings.Trim(val, `'"`)
			}
		}
	}
	if env[s.envVar] == "" {
		return "", fmt.Errorf("%s up gave no %s (logs in %s)", filepath.Base(s.script), s.envVar, s.state)
	}
	return env[s.envVar], nil
}

// pid is the PID the script recorded for what it started (0: none).
func (s *service) pid() int {
	if s.state == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(s.state, s.name+".pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// down stops what up started (by the PID the script recorded).
func (s *service) down(logw io.Writer) error {
	if s.state == "" {
		return nil
	}
	// Not CommandContext: down runs at shutdown, when the run's context is
	// already cancelled, and must still stop the services.
	cmd := exec.Command("bash", s.script, "down", s.state) //nolint:noctx // see above
	cmd.Stdout, cmd.Stderr = logw, logw
	return cmd.Run()
}

// createTables creates the template's tables (and their TTL), waiting
// until each is active. A table that exists already is kept.
func createTables(ctx context.Context, client *dynamodb.Client, stack *samtemplate.Stack) error {
	for _, id := range sortedKeys(stack.Tables) {
		t := stack.Tables[id]
		in := tableInput(t)
		_, err := client.CreateTable(ctx, in)
		var inUse *ddbtypes.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("creating table %s (%s): %w", t.Name, id, err)
		}
		w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)}, time.Minute); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		if ttl := t.Spec.TimeToLiveSpecification; ttl != nil && ttl.Enabled.V && ttl.AttributeName != "" {
			_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(t.Name),
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(ttl.AttributeName), Enabled: aws.Bool(true)}})
			if err != nil && !strings.Contains(err.Error(), "already enabled") {
				return fmt.Errorf("table %s: TTL: %w", t.Name, err)
			}
		}
	}
	return nil
}

// tableInput is the CreateTable request for a template table, as
// CloudFormation would make it (on-demand capacity unless provisioned).
func tableInput(t *samtemplate.Table) *dynamodb.CreateTableInput {
	key := func(ks []samtemplate.KeyElement) []ddbtypes.KeySchemaElement {
		out := make([]ddbtypes.KeySchemaElement, len(ks))
		for i, k := range ks {
			out[i] = ddbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: ddbtypes.KeyType(k.KeyType)}
		}
		return out
	}
	proj := func(ix samtemplate.Index) *ddbtypes.Projection {
		p := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(ix.Projection.ProjectionType)}
		if len(ix.Projection.NonKeyAttributes) > 0 {
			p.NonKeyAttributes = ix.Projection.NonKeyAttributes
		}
		return p
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(t.Name), KeySchema: key(t.Spec.KeySchema), BillingMode: ddbtypes.BillingModePayPerRequest}
	if t.Spec.BillingMode == string(ddbtypes.BillingModeProvisioned) {
		in.BillingMode = ddbtypes.BillingModeProvisioned
		in.ProvisionedThroughput = &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}
	}
	for _, a := range t.Spec.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: ddbtypes.ScalarAttributeType(a.AttributeType)})
	}
	for _, ix := range t.Spec.GlobalSecondaryIndexes {
		g := ddbtypes.GlobalSecondaryIndex{IndexName: aws.String(ix.IndexName), KeySchema: key(ix.KeySchema), Projection: proj(ix)}
		if in.ProvisionedThroughput != nil {
			g.ProvisionedThroughput = in.ProvisionedThroughput
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, g)
	}
	for _, ix := range t.Spec.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{
			IndexName: aws.String(ix.IndexName), KeySchema: key(ix.KeySchema), Projection: proj(ix)})
	}
	if s := t.Spec.StreamSpecification; s != nil {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(s.StreamViewType)}
	}
	return in
}

// queueInfo is a created queue's URL and ARN.
type queueInfo struct {
	URL, ARN string
	// Visibility is the visibility timeout the queue was created with.
	Visibility time.Duration
}

// createQueues creates the template's queues, dead-letter queues first so
// the redrive policies can name them. visibility, if set, replaces every
// queue's visibility timeout (a faster retry for tests and demos).
func createQueues(ctx context.Context, client *sqs.Client, stack *samtemplate.Stack, visibility time.Duration) (map[string]queueInfo, error) {
	out := map[string]queueInfo{}
	var create func(id string) error
	create = func(id string) error {
		if _, done := out[id]; done {
			return nil
		}
		q := stack.Queues[id]
		attrs := map[string]string{}
		vis := q.VisibilityTimeout
		if visibility > 0 {
			vis = visibility
		}
		attrs[string(sqstypes.QueueAttributeNameVisibilityTimeout)] = strconv.Itoa(int(vis / time.Second))
		if q.MessageRetention > 0 {
			attrs[string(sqstypes.QueueAttributeNameMessageRetentionPeriod)] = strconv.Itoa(int(q.MessageRetention / time.Second))
		}
		if q.Fifo {
			attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
		}
		if q.DeadLetter != "" {
			if err := create(q.DeadLetter); err != nil {
				return err
			}
			attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`,
				out[q.DeadLetter].ARN, q.MaxReceiveCount)
		}
		res, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("creating queue %s (%s): %w", q.Name, id, err)
		}
		url := aws.ToString(res.QueueUrl)
		ga, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("queue %s: %w", q.Name, err)
		}
		out[id] = queueInfo{URL: url, ARN: ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], Visibility: vis}
		return nil
	}
	for _, id := range sortedKeys(stack.Queues) {
		if err := create(id); err != nil {
			return nil, err
		}
	}
	return out, nil
}
