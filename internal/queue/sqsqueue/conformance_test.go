package sqsqueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/queuetest"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/testenv"
)

// Features is what an SQS standard queue promises (and the emulator the
// tests run against keeps).
var Features = queuetest.Features{
	AtLeastOnce:                      true,
	RedeliveryAfterVisibilityTimeout: true,
	DelayOnRetry:                     true,
	DelayedSend:                      true,
	DeadLetter:                       true,
	MessageAttributes:                true,
	Ordering:                         queuetest.OrderingNone,
	Capacity:                         0, // SQS holds any number of messages
	Persistent:                       true,
	TimeGranularity:                  time.Second,
}

var queueSeq atomic.Int64

// queueName is unique per test run and call, within SQS's 80 characters.
func queueName(t testing.TB) string {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, t.Name())
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	return fmt.Sprintf("t%d-%d-%s", time.Now().UnixNano()%1e9, queueSeq.Add(1), base)
}

func client(t testing.TB) *sqs.Client {
	t.Helper()
	return sqsqueue.NewLocalClient(testenv.SQSEndpoint(t))
}

// newPair creates a work queue with its DLQ on the emulator, deleted when
// the test ends.
func newPair(t testing.TB, c *sqs.Client, opts queuetest.Options) sqsqueue.Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sqsqueue.CreateWithDLQ(ctx, c, queueName(t), sqsqueue.SetupOptions{
		VisibilityTimeout: opts.VisibilityTimeout,
		MaxReceiveCount:   opts.MaxReceives,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqsqueue.DeletePair(context.Background(), c, p) })
	return p
}

func TestConformance(t *testing.T) {
	c := client(t)
	queuetest.Run(t, Features, func(t *testing.T, opts queuetest.Options) (queue.Queue, queue.Queue) {
		p := newPair(t, c, opts)
		return sqsqueue.New(c, p.URL), sqsqueue.New(c, p.DLQURL)
	})
}
