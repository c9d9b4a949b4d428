package reconcile

import (
	"context"
	"errors"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// lister reads one page of active instances from one source.
type lister func(ctx context.Context, cursor string, limit int) (store.Page[container.Instance], error)

// sources are where a pass reads its active instances: the whole store
// (ListActive) for the whole fleet, else each of the shard's buckets
// (store.InstanceStore.ListActiveInBucket).
func (r *Reconciler) sources() []lister {
	if r.shard.IsWhole() {
		return []lister{r.st.ListActive}
	}
	buckets := r.shard.Buckets()
	out := make([]lister, len(buckets))
	for i, b := range buckets {
		out[i] = func(ctx context.Context, cursor string, limit int) (store.Page[container.Instance], error) {
			return r.st.ListActiveInBucket(ctx, b, cursor, limit)
		}
	}
	return out
}

// listActive pages through the pass's sources in turn, from where the last
// truncated pass stopped, up to maxInstances, without duplicates (an
// instance that changes status during the walk may be listed twice). A
// pass that reaches the last source starts the next one at the first, so
// every bucket of a shard is read in turn however often passes are
// truncated.
func (r *Reconciler) listActive(ctx context.Context, rep *Report) ([]container.Instance, error) {
	sources := r.sources()
	var out []container.Instance
	seen := make(map[string]bool)
	at, cursor := r.bucketAt, r.cursor
	if at >= len(sources) {
		at, cursor = 0, ""
	}
	for visited := 0; visited < len(sources); {
		page, err := sources[at](ctx, cursor, min(pageSize, r.maxInstances-len(out)))
		if errors.Is(err, store.ErrInvalidCursor) && cursor != "" {
			cursor = ""
			continue
		}
		if err != nil {
			if len(out) > 0 && ctx.Err() != nil {
				rep.Truncated = true
				return out, nil
			}
			return nil, err
		}
		for _, inst := range page.Items {
			if !seen[inst.ID] {
				seen[inst.ID] = true
				out = append(out, inst)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			at, visited = (at+1)%len(sources), visited+1
		}
		if len(out) >= r.maxInstances && visited < len(sources) {
			r.bucketAt, r.cursor = at, cursor
			rep.Truncated = true
			return out, nil
		}
	}
	r.bucketAt, r.cursor = 0, ""
	return out, nil
}
