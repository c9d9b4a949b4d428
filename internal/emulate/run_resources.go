package emulate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/samtemplate"
)

// startServices starts DynamoDB Local and the SQS emulator (or takes the
// running ones the environment names) and makes their clients.
func (e *emulation) startServices(ctx context.Context) error {
	services := []*service{
		{name: "dynamodb-local", script: filepath.Join(e.root, "scripts/testenv/dynamodb-local.sh"), envVar: "AWS_ENDPOINT_URL_DYNAMODB"},
		{name: "sqs", script: filepath.Join(e.root, "scripts/testenv/sqs.sh"), envVar: "AWS_ENDPOINT_URL_SQS"},
	}
	// Each service writes only its own result; env is updated after all.
	endpoints := make([]string, len(services))
	errs := make([]error, len(services))
	var upWG sync.WaitGroup
	for i, s := range services {
		local := map[string]string{s.envVar: e.env[s.envVar]}
		upWG.Go(func() {
			endpoints[i], errs[i] = s.up(ctx, local, e.o.StateDir, e.o.FunctionOutput)
			if errs[i] == nil && s.state != "" {
				e.log.Info("service started", "service", s.name, s.envVar, endpoints[i], "pid", s.pid())
			}
		})
	}
	upWG.Wait()
	e.undo = append(e.undo, func() {
		for _, s := range services {
			if derr := s.down(e.o.FunctionOutput); derr != nil {
				e.log.Error("stopping a service", "service", s.name, "error", derr)
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range services {
		e.env[s.envVar] = endpoints[i]
	}
	awsCfg := aws.Config{Region: e.tplOpts.Region, Credentials: credentials.NewStaticCredentialsProvider("berth", "emulate", "")}
	e.ddb = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(e.env["AWS_ENDPOINT_URL_DYNAMODB"])
		o.DisableValidateResponseChecksum = true
	})
	e.streams = dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(e.env["AWS_ENDPOINT_URL_DYNAMODB"])
	})
	e.sqs = sqs.NewFromConfig(awsCfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(e.env["AWS_ENDPOINT_URL_SQS"]) })
	return nil
}

// createResources creates the template's tables and queues, then reads the
// template again with their real URLs and ARNs.
func (e *emulation) createResources(ctx context.Context) (err error) {
	if err := createTables(ctx, e.ddb, e.stack); err != nil {
		return err
	}
	if e.queues, err = createQueues(ctx, e.sqs, e.stack, e.o.VisibilityTimeout); err != nil {
		return err
	}
	e.tplOpts.Attributes = map[string]map[string]string{}
	for id, q := range e.queues {
		e.tplOpts.Attributes[id] = map[string]string{"Ref": q.URL, "QueueUrl": q.URL, "Arn": q.ARN}
	}
	e.streamARNs = map[string]string{}
	for id, t := range e.stack.Tables {
		if t.Spec.StreamSpecification == nil {
			continue
		}
		d, err := e.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
		if err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		e.streamARNs[id] = aws.ToString(d.Table.LatestStreamArn)
		e.tplOpts.Attributes[id] = map[string]string{"StreamArn": e.streamARNs[id]}
	}
	if e.stack, err = samtemplate.Load(e.o.Template, e.tplOpts); err != nil {
		return err
	}
	e.dc.stack = e.stack
	e.dc.log(e.log)
	if e.o.VisibilityTimeout > 0 {
		e.log.Warn("every queue's visibility timeout is replaced", "visibility_timeout", e.o.VisibilityTimeout.String())
	}
	return nil
}
