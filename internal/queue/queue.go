// Package queue is berth's work queue: a small interface with an SQS
// implementation (AWS) and an in-process one (the local server), both
// passing one conformance suite (queuetest) that states their guarantees.
package queue

import (
	"context"
	"fmt"
	"time"
)

// Outgoing is a message to send.
type Outgoing struct {
	// ID identifies the entry within a batch (SQS batch entry id rules:
	// up to 80 letters, digits, '-' or '_'); results name it.
	ID   string
	Body []byte
	// Attributes travel with the message (string values). Entries with an
	// empty value are dropped by every implementation: SQS refuses them.
	Attributes map[string]string
	// Delay keeps the message invisible for this long (at most MaxDelay).
	Delay time.Duration
}

// Delivery is a received message. It stays invisible to other receivers
// until Ack, Nack or the visibility timeout.
type Delivery struct {
	MessageID  string
	Body       []byte
	Attributes map[string]string
	// ReceiveCount is 1 on the first delivery, 2 on the second, …
	ReceiveCount int
	// SentAt is when the message was first sent (queue age at receive).
	SentAt time.Time
	// Handle is the receipt for Ack and Nack. Only the latest delivery's
	// handle counts: after a redelivery, Ack with an earlier handle removes
	// nothing (memqueue says so with an error, SQS silently).
	Handle string
}

// Queue is a work queue with at-least-once delivery.
//
// Guarantees every implementation gives (queuetest checks them):
//   - at least once: a sent message is delivered until it is acked; it may
//     be delivered more than once, so consumers must be idempotent;
//   - a received message is invisible to other receivers until it is acked
//     or nacked or its visibility timeout passes, then it is delivered again
//     with ReceiveCount + 1;
//   - Nack(delay) makes it visible again after delay (retry with backoff);
//   - after MaxReceives deliveries without an ack, the next receive moves it
//     to the dead-letter queue instead of delivering it;
//   - no ordering is promised.
//
// Each implementation declares these (and what it adds: a capacity,
// persistence, time granularity) as a queuetest.Features value and passes
// queuetest.Run with it.
type Queue interface {
	// Send sends a batch of at most 10 messages. When some entries fail, it
	// returns a *BatchError naming them; the others were sent.
	Send(ctx context.Context, msgs []Outgoing) error
	// Receive waits up to wait for at most max (1..10) messages.
	Receive(ctx context.Context, max int, wait time.Duration) ([]Delivery, error)
	// Ack removes a delivered message for good.
	Ack(ctx context.Context, d Delivery) error
	// Nack makes a delivered message visible again after delay.
	Nack(ctx context.Context, d Delivery, delay time.Duration) error
}

// BatchError reports the entries of a Send that failed, by Outgoing.ID.
type BatchError struct {
	Failed map[string]error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("queue: %d message(s) of the batch failed", len(e.Failed))
}

// MaxBatch is the most messages Send takes at once (SQS's limit).
const MaxBatch = 10

// MaxDelay is the longest Outgoing.Delay (SQS's limit, 900 s).
const MaxDelay = 15 * time.Minute
