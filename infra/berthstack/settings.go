package berthstack

import (
	"time"

	"github.com/berth-io/berth/internal/config"
)

// Function timeouts and memory: the settings template.yaml gives each function.
const (
	// APITimeout covers the longest request, a wait (server.wait_max, 25 s), plus a margin;
	// API Gateway's own integration limit is 30 s.
	APITimeout = 29 * time.Second
	// DispatcherTimeout bounds one stream batch: a send per record and a mark per record.
	DispatcherTimeout = 60 * time.Second
	// LifecycleWorkerTimeout covers a stop (stop_grace_period) or delete plus runtime calls.
	LifecycleWorkerTimeout = 120 * time.Second
	// ReconcilerTimeout bounds one pass; a pass cut short resumes on the next tick.
	ReconcilerTimeout = 120 * time.Second
	// CreateWorkerMargin is added to create_start_timeout for the create worker's timeout:
	// the worker stops waiting for a stable container before the invocation's own deadline.
	CreateWorkerMargin = 60 * time.Second

	// FunctionMemoryMB is every function's memory; CPU scales with it, and the functions are
	// I/O bound.
	FunctionMemoryMB = 256
)

// Queue and stream settings.
const (
	// VisibilityFactor is AWS's recommendation for a queue an SQS mapping consumes: its
	// visibility timeout is six times the consumer's timeout, so a message is not redelivered
	// while an invocation that holds it (and the mapping's own retries) can still run.
	VisibilityFactor = 6
	// DeadLetterRetention keeps dead letters for SQS's maximum, 14 days, for investigation.
	DeadLetterRetention = 14 * 24 * time.Hour
	// DispatcherBatchSize is the stream records per dispatcher invocation.
	DispatcherBatchSize = 100
	// DispatcherMaxRetries bounds the retries of a failing stream batch (bisected on error);
	// past them the record goes to the dispatch failure queue, and the outbox sweep sends the
	// item anyway because it is still pending.
	DispatcherMaxRetries = 5
	// DispatcherMaxRecordAge bounds how long a record is retried.
	DispatcherMaxRecordAge = time.Hour
	// LifecycleBatchSize is the lifecycle worker's batch: several stops and deletes per
	// invocation, each reported on its own (ReportBatchItemFailures).
	LifecycleBatchSize = 10
)

// CreateWorkerTimeout is the create worker's timeout: create_start_timeout plus
// CreateWorkerMargin. The slot is the invocation.
func CreateWorkerTimeout() time.Duration {
	return config.Default().Container.CreateStartTimeout + CreateWorkerMargin
}
