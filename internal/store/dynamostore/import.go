package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// maxBatchWrite is DynamoDB's limit of puts in one BatchWriteItem.
const maxBatchWrite = 25

// DefaultImportConcurrency is how many BatchWriteItem requests
// ImportInstances keeps in flight (ImportOptions.Concurrency): one request
// waits mostly on the network, so a handful at once load a table many
// times faster than one after another, while staying far below an
// on-demand table's write throughput.
const DefaultImportConcurrency = 16

// ImportOptions configures ImportInstances.
type ImportOptions struct {
	// Concurrency is how many BatchWriteItem requests are in flight at
	// once. Defaults to DefaultImportConcurrency.
	Concurrency int
}

// ImportInstances bulk-loads instances that already exist elsewhere
// (a restore from a backup, a migration from another store, a benchmark's
// fleet) into the instances table: each becomes the item marshalInstance
// makes, with every index key the store's own writes give it (by_owner,
// by_status_key, by_deadline, by_node_bucket), so GetInstance and every
// listing read it back as given. The items go in BatchWriteItem requests of
// maxBatchWrite, many in flight; items DynamoDB leaves unprocessed are sent
// again after a pause.
//
// It is a load, not a write of the running service: a put is
// unconditional and replaces an instance with the same id, no event is
// written (the history is not imported; the next event takes seq
// EventSeq+1) and no counter is changed. It is therefore for a deployment
// nothing else writes to meanwhile. Because no counter changes, an
// instance whose status holds a create admission slot (pending,
// creating), or that counts in a quota or in usage (QuotaCounted,
// UsageCounted), is refused with store.ErrInvalidParams before anything is
// written, as are an instance without an id, status or version, and an id
// given twice. On an error some batches may have been written; importing
// the same instances again writes the same items.
func (s *Store) ImportInstances(ctx context.Context, instances []container.Instance, opts ImportOptions) error {
	const op = "import instances"
	items := make([]types.WriteRequest, len(instances))
	seen := make(map[string]bool, len(instances))
	for i, in := range instances {
		if err := importable(in, seen); err != nil {
			return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, in.ID, err)
		}
		av, err := marshalInstance(in)
		if err != nil {
			return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, in.ID, err)
		}
		items[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = DefaultImportConcurrency
	}
	// The first failure cancels the rest: the other batches stop at their
	// next request, and it is the error returned.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for len(items) > 0 && gctx.Err() == nil {
		batch := items[:min(len(items), maxBatchWrite)]
		items = items[len(batch):]
		g.Go(func() error { return s.writeBatch(gctx, op, batch) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dynamostore: %s %s: %w", op, s.instances, err)
	}
	return nil
}

// importable checks that ImportInstances can load in without writing
// anything but its item, and that its id is not given twice.
func importable(in container.Instance, seen map[string]bool) error {
	switch {
	case in.ID == "":
		return fmt.Errorf("no id: %w", store.ErrInvalidParams)
	case seen[in.ID]:
		return fmt.Errorf("given twice: %w", store.ErrInvalidParams)
	case !in.Status.Valid():
		return fmt.Errorf("status %q: %w", in.Status, store.ErrInvalidParams)
	case in.Version < 1:
		return fmt.Errorf("version %d: %w", in.Version, store.ErrInvalidParams)
	case in.Status.HoldsCreateSlot():
		return fmt.Errorf("status %s holds a create admission slot, which an import does not take: %w", in.Status, store.ErrInvalidParams)
	case in.QuotaCounted || in.UsageCounted:
		return fmt.Errorf("counted in a quota or in usage, which an import does not count: %w", store.ErrInvalidParams)
	}
	seen[in.ID] = true
	return nil
}

// writeBatch writes one batch of puts to the instances table, sending what
// DynamoDB leaves unprocessed (throttling) again after a pause, as its
// documentation asks, up to maxAttempts times.
func (s *Store) writeBatch(ctx context.Context, op string, batch []types.WriteRequest) error {
	req := map[string][]types.WriteRequest{s.instances: batch}
	for attempt := 1; ; attempt++ {
		out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
		if err != nil {
			return fail(op, s.instances, firstID(batch), err)
		}
		if len(out.UnprocessedItems) == 0 {
			return nil
		}
		req = out.UnprocessedItems
		if attempt >= s.maxAttempts {
			return errContention(op, s.instances, firstID(req[s.instances]), attempt, fmt.Errorf("%d items left unprocessed", len(req[s.instances])))
		}
		if err := pause(ctx, attempt, nil); err != nil {
			return err
		}
	}
}

// firstID names a batch in an error by its first instance's id.
func firstID(batch []types.WriteRequest) string {
	if len(batch) == 0 || batch[0].PutRequest == nil {
		return ""
	}
	if id, ok := batch[0].PutRequest.Item[AttrID].(*types.AttributeValueMemberS); ok {
		return id.Value
	}
	return ""
}
