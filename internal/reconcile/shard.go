package reconcile

import (
	"context"
	"errors"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// listShard is listActive for a shard's pass: the active instances of the
// shard's buckets (store.InstanceStore.ListActiveInBucket), bucket by
// bucket from where the last truncated pass stopped, up to maxInstances. A
// pass that reaches the last bucket starts the next one at the first, so
// every bucket is read in turn however often passes are truncated.
func (r *Reconciler) listShard(ctx context.Context, rep *Report) ([]container.Instance, error) {
	buckets := r.shard.Buckets()
	var out []container.Instance
	seen := make(map[string]bool)
	at, cursor := r.bucketAt, r.cursor
	if at >= len(buckets) {
		at, cursor = 0, ""
	}
	for visited := 0; visited < len(buckets); {
		page, err := r.st.ListActiveInBucket(ctx, buckets[at], cursor, min(pageSize, r.maxInstances-len(out)))
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
			at, visited = (at+1)%len(buckets), visited+1
		}
		if len(out) >= r.maxInstances && visited < len(buckets) {
			r.bucketAt, r.cursor = at, cursor
			rep.Truncated = true
			return out, nil
		}
	}
	r.bucketAt, r.cursor = 0, ""
	return out, nil
}
