package memqueue_test

import (
	"testing"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/queue/queuetest"
)

// Features is what the in-process queue promises.
var Features = queuetest.Features{
	AtLeastOnce:                      true,
	RedeliveryAfterVisibilityTimeout: true,
	DelayOnRetry:                     true,
	DelayedSend:                      true,
	DeadLetter:                       true,
	MessageAttributes:                true,
	Ordering:                         queuetest.OrderingNone,
	Capacity:                         testCapacity,
	Persistent:                       false,
}

const testCapacity = 50

func TestConformance(t *testing.T) {
	queuetest.Run(t, Features, func(t *testing.T, opts queuetest.Options) (queue.Queue, queue.Queue) {
		dlq := memqueue.New(memqueue.Options{Name: t.Name() + "-dlq", Capacity: testCapacity})
		q := memqueue.New(memqueue.Options{
			Name:              t.Name(),
			Capacity:          testCapacity,
			VisibilityTimeout: opts.VisibilityTimeout,
			MaxReceives:       opts.MaxReceives,
			DeadLetter:        dlq,
		})
		t.Cleanup(func() { _ = q.Close(); _ = dlq.Close() })
		return q, dlq
	})
}
