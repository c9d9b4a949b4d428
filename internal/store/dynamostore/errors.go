package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/store"
)

// transient classifies the errors that mean "DynamoDB could not serve this
// now": throttling, 5xx, connection failures and retries exhausted on them.
// The SDK's own classifiers decide, so this agrees with what its retryer
// already retried.
var (
	throttles  = retry.IsErrorThrottles(retry.DefaultThrottles)
	retryables = retry.IsErrorRetryables(retry.DefaultRetryables)
)

func isTransient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var (
		conflict *types.TransactionConflictException
		internal *types.InternalServerError
		limit    *types.RequestLimitExceeded
		exceeded *types.ProvisionedThroughputExceededException
		maxed    *retry.MaxAttemptsError
	)
	switch {
	case errors.As(err, &conflict), errors.As(err, &internal), errors.As(err, &limit),
		errors.As(err, &exceeded), errors.As(err, &maxed):
		return true
	}
	return throttles.IsErrorThrottle(err) == aws.TrueTernary || retryables.IsErrorRetryable(err) == aws.TrueTernary
}

// fail wraps a DynamoDB error with the operation, table and key; transient
// errors also wrap store.ErrUnavailable so callers can tell them apart.
func fail(op, table, key string, err error) error {
	if isTransient(err) {
		return fmt.Errorf("dynamostore: %s %s %q: %w: %w", op, table, key, store.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamostore: %s %s %q: %w", op, table, key, err)
}

// failWith wraps one of the store's sentinel errors with the operation,
// table and key.
func failWith(sentinel error, op, table, key string) error {
	return fmt.Errorf("dynamostore: %s %s %q: %w", op, table, key, sentinel)
}

// isConditionFailed reports a single-item write whose condition failed.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// backoff spaces out the store's own retries (lost races on the same items)
// with the SDK's exponential jitter: a short base, because a lost
// transaction race is over as soon as the winner commits, and no retry
// token bucket, because these retries are bounded by Options.MaxAttempts.
var backoff = retry.NewStandard(func(o *retry.StandardOptions) {
	o.BaseDelay = 10 * time.Millisecond
	o.MaxBackoff = 250 * time.Millisecond
	o.RateLimiter = ratelimit.None
})

// pause waits before retry attempt+1 of an operation, or returns ctx's error.
func pause(ctx context.Context, attempt int, cause error) error {
	d, err := backoff.RetryDelay(attempt, cause)
	if err != nil {
		d = 10 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errContention is returned (wrapping store.ErrUnavailable) when an operation
// lost every one of its attempts to concurrent writers.
func errContention(op, table, key string, attempts int, last error) error {
	return fmt.Errorf("dynamostore: %s %s %q: gave up after %d attempts lost to concurrent writes: %w: %w",
		op, table, key, attempts, store.ErrUnavailable, last)
}
