package eventbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// API is the part of the EventBridge client a Publisher uses. Throttled
// and failed requests are retried by the client's own retryer; a Publisher
// retries only the entries a successful request reports failed.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// PutEvents' limits: entries per request, and bytes of a request's entries
// as EventBridge counts them (entrySize).
const (
	MaxEntries    = 10
	MaxBatchBytes = 256 * 1024
)

// Defaults of Publisher.
const (
	// DefaultAttempts is how many times a failed entry is put before
	// Publish gives it up. Defaults to 3.
	DefaultAttempts = 3
	// DefaultRetryDelay is the wait before the first retry of failed
	// entries; it doubles per attempt. Defaults to 100 ms.
	DefaultRetryDelay = 100 * time.Millisecond
)

// ErrTooLarge is an entry larger than a whole request may be.
var ErrTooLarge = errors.New("event larger than PutEvents allows")

// Publisher puts events on one bus, in requests within PutEvents' limits.
type Publisher struct {
	Client API
	// Bus is the bus's name or ARN; "" is the account's default bus.
	Bus string
	// Attempts defaults to DefaultAttempts.
	Attempts int
	// RetryDelay defaults to DefaultRetryDelay.
	RetryDelay time.Duration
}

// entrySize is an entry's size as EventBridge counts it against
// MaxBatchBytes: 14 bytes for the time, plus the bytes of source,
// detail-type, detail and resources.
func entrySize(e types.PutEventsRequestEntry) int {
	n := 14 + len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// batches splits entries (by index) into requests of at most MaxEntries
// entries and MaxBatchBytes bytes, in order. An entry too large for any
// request is left out and reported in tooLarge.
func batches(entries []types.PutEventsRequestEntry) (out [][]int, tooLarge []int) {
	var cur []int
	size := 0
	for i, e := range entries {
		n := entrySize(e)
		if n > MaxBatchBytes {
			tooLarge = append(tooLarge, i)
			continue
		}
		if len(cur) == MaxEntries || size+n > MaxBatchBytes {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, tooLarge
}

// Publish puts entries on the bus (their EventBusName is set to Bus) and
// returns one error per entry (nil for those put), in entries' order, and
// an error when any failed. Entries a request reports failed are put again,
// alone, up to Attempts times in all.
func (p *Publisher) Publish(ctx context.Context, entries []types.PutEventsRequestEntry) ([]error, error) {
	errs := make([]error, len(entries))
	pending := make([]int, 0, len(entries))
	for i := range entries {
		if p.Bus != "" {
			entries[i].EventBusName = aws.String(p.Bus)
		}
		pending = append(pending, i)
	}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	delay := p.RetryDelay
	if delay <= 0 {
		delay = DefaultRetryDelay
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				for _, i := range pending {
					errs[i] = fmt.Errorf("%w (after %w)", ctx.Err(), errs[i])
				}
				return errs, joinFailed(errs)
			case <-t.C:
			}
			delay *= 2
		}
		pending = p.putOnce(ctx, entries, pending, errs)
		if attempt == attempts {
			break
		}
	}
	return errs, joinFailed(errs)
}

// putOnce puts the entries at indexes pending, recording each one's
// outcome in errs, and returns those worth another attempt.
func (p *Publisher) putOnce(ctx context.Context, entries []types.PutEventsRequestEntry, pending []int, errs []error) []int {
	sub := make([]types.PutEventsRequestEntry, len(pending))
	for k, i := range pending {
		sub[k] = entries[i]
	}
	groups, tooLarge := batches(sub)
	for _, k := range tooLarge {
		errs[pending[k]] = fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, entrySize(sub[k]), MaxBatchBytes)
	}
	var retry []int
	for _, g := range groups {
		in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(g))}
		for j, k := range g {
			in.Entries[j] = sub[k]
		}
		out, err := p.Client.PutEvents(ctx, in)
		if err != nil {
			// The client's retryer has given up on the whole request.
			for _, k := range g {
				errs[pending[k]] = fmt.Errorf("putting events on bus %q: %w", p.busName(), err)
				retry = append(retry, pending[k])
			}
			continue
		}
		for j, k := range g {
			i := pending[k]
			if j >= len(out.Entries) {
				errs[i] = fmt.Errorf("putting events on bus %q: no result for entry %d", p.busName(), j)
				retry = append(retry, i)
				continue
			}
			if r := out.Entries[j]; r.ErrorCode != nil {
				errs[i] = fmt.Errorf("putting an event on bus %q: %s: %s", p.busName(), aws.ToString(r.ErrorCode), aws.ToString(r.ErrorMessage))
				retry = append(retry, i)
				continue
			}
			errs[i] = nil
		}
	}
	return retry
}

func (p *Publisher) busName() string {
	if p.Bus == "" {
		return "default"
	}
	return p.Bus
}

func joinFailed(errs []error) error {
	n := 0
	var first error
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d events not put: %w", n, len(errs), first)
}
