package berthstack

import "time"

// Function settings; template.yaml gives each function the same.
const (
	// APITimeout: GET .../wait holds a request up to server.wait_max (25 s), and API Gateway
	// ends an integration at 30 s.
	APITimeout = 29 * time.Second
	// DispatcherTimeout bounds one stream batch: a send and a mark per record.
	DispatcherTimeout = 30 * time.Second
	// ReconcilerTimeout bounds one pass; a pass cut short resumes on the next tick.
	ReconcilerTimeout = 120 * time.Second
	// WorkerMargin is added to create_start_timeout for the workers' timeout: placing,
	// creating and the bookkeeping around the wait (the worker stops waiting before its
	// invocation's deadline).
	WorkerMargin = 60 * time.Second
	// NotifyTimeout bounds one delivery: its POST (webhook.DefaultTimeout, 15 s) and the
	// reads and marks around it.
	NotifyTimeout = 30 * time.Second
	// FunctionMemoryMB is every function's memory but the watcher's; the functions are I/O
	// bound.
	FunctionMemoryMB = 256
)

// Queue, stream and API settings.
const (
	// VisibilityFactor is AWS's recommendation for a queue an SQS mapping consumes: a
	// visibility timeout six times the consumer's timeout.
	VisibilityFactor = 6
	// QueueRetention keeps work messages four days (SQS's default, written out).
	QueueRetention = 4 * 24 * time.Hour
	// DeadLetterRetention keeps dead letters and stream failures SQS's maximum, 14 days.
	DeadLetterRetention = 14 * 24 * time.Hour
	// DispatcherBatchSize is the stream records per dispatcher invocation.
	DispatcherBatchSize = 100
	// DispatcherMaxRetries bounds the retries of a failing stream batch (bisected on error);
	// past them the record's description goes to the stream failure queue, and the
	// reconciler's sweep sends the item, which is still pending.
	DispatcherMaxRetries = 5
	// DispatcherMaxRecordAge bounds how long a stream record is retried.
	DispatcherMaxRecordAge = 15 * time.Minute
	// LifecycleBatchSize: a start waits for stability like a create, so one per invocation.
	LifecycleBatchSize = 1
	// NotifyBatchSize: one delivery per invocation, so a slow receiver holds no other
	// delivery behind it in a batch.
	NotifyBatchSize = 1
	// NotifyMaxConcurrency bounds the deliveries in flight (the notify mapping's maximum
	// concurrency): what a burst of deliveries, or many slow receivers, may take of the
	// account's unreserved concurrency, which the lifecycle worker draws from too. Nothing is
	// reserved for it: a reservation would be taken from that same pool for good.
	NotifyMaxConcurrency = 10
	// NotifyQueueVisibility is the notify queue's visibility timeout: VisibilityFactor times
	// the notify function's timeout.
	NotifyQueueVisibility = VisibilityFactor * NotifyTimeout
	// APIThrottleBurst and APIThrottleRate bound the whole API's request rate.
	APIThrottleBurst = 200
	APIThrottleRate  = 100
	// ReconcilerScheduleRetries: a failed pass is not retried; the next tick runs one anyway.
	ReconcilerScheduleRetries = 0
	// DispatcherParallelization is one batch per shard at a time: the outbox stream's order
	// within a shard is kept.
	DispatcherParallelization = 1
	// APIIntegrationTimeout is API Gateway's longest wait on the api function.
	APIIntegrationTimeout = 30 * time.Second
)

// Alarm settings.
const (
	// AlarmPeriod is the period of every alarm's metric.
	AlarmPeriod = 5 * time.Minute
	// OutboxAgeThreshold: an item is normally dispatched within a second; older than the sweep
	// age plus a few periods means neither the stream nor the sweep is sending.
	OutboxAgeThreshold = 5 * time.Minute
	// RunErrorsEvaluationPeriods and RunErrorsDatapoints: a scheduled function's (the
	// reconciler's, the watcher's) errors alarm fires when invocations failed in 2 of the last 3
	// periods, so one failed run, which the next tick makes up for, pages nobody.
	RunErrorsEvaluationPeriods = 3
	RunErrorsDatapoints        = 2
)

// WorkerTimeout is the workers' timeout for a create_start_timeout: the wait plus WorkerMargin.
func WorkerTimeout(createStart time.Duration) time.Duration { return createStart + WorkerMargin }

// QueueVisibility is the work queues' visibility timeout for a create_start_timeout.
func QueueVisibility(createStart time.Duration) time.Duration {
	return VisibilityFactor * WorkerTimeout(createStart)
}

func secondsOf(n int) time.Duration { return time.Duration(n) * time.Second }
