package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Workers holds the two queue consumers: the create worker, whose concurrency is the create
// limit, and the lifecycle worker (start, stop, delete).
type Workers struct {
	constructs.Construct
	Create    awslambda.Function
	Lifecycle awslambda.Function
}

// MinSQSMaxConcurrency is SQS's floor for an event source mapping's maximum concurrency.
const MinSQSMaxConcurrency = 2

func newWorkers(scope constructs.Construct, p Props, tables *Tables, pl *Pipeline, rt *RuntimeAccess) (*Workers, error) {
	w := &Workers{Construct: constructs.NewConstruct(scope, jsii.String("Workers"))}
	env := merge(storeEnv(tables), queueEnv(pl), containerEnv(p), rt.env())

	create, err := newFunction(w.Construct, p, functionSpec{
		id: "CreateWorkerFunction", binary: "worker",
		timeout: CreateWorkerTimeout(), memory: FunctionMemoryMB,
		// The create limit: at most this many creates hold a slot at once, each for its whole
		// invocation (until the container is stable or create_start_timeout passes).
		reserved: p.CreateQueueMaxConcurrency,
		inVPC:    true, env: env,
	})
	if err != nil {
		return nil, err
	}
	createSource := &awslambdaeventsources.SqsEventSourceProps{
		// One create per invocation: the invocation is the slot.
		BatchSize:               jsii.Number(1),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	// The mapping's maximum concurrency keeps the poller from invoking past the reserved
	// concurrency (throttled invocations would spend receives, and so attempts, for nothing).
	// SQS refuses a value below 2; with a limit of 1 the reserved concurrency alone holds it.
	if p.CreateQueueMaxConcurrency >= MinSQSMaxConcurrency {
		createSource.MaxConcurrency = jsii.Number(p.CreateQueueMaxConcurrency)
	}
	create.AddEventSource(awslambdaeventsources.NewSqsEventSource(pl.Create.Queue, createSource))
	w.Create = create

	lifecycle, err := newFunction(w.Construct, p, functionSpec{
		id: "LifecycleWorkerFunction", binary: "worker",
		timeout: LifecycleWorkerTimeout, memory: FunctionMemoryMB,
		inVPC: true, env: env,
	})
	if err != nil {
		return nil, err
	}
	lifecycle.AddEventSource(awslambdaeventsources.NewSqsEventSource(pl.Lifecycle.Queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(LifecycleBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	w.Lifecycle = lifecycle

	for _, fn := range []awslambda.Function{create, lifecycle} {
		allowStore(fn, tables)
		allowRetryDelay(fn, pl.Create.Queue, pl.Lifecycle.Queue)
		rt.allowRead(fn)
	}
	return w, nil
}
