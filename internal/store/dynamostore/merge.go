package dynamostore

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// shardStream is what mergeShards has not yet taken from one shard.
type shardStream struct {
	fetch fetcher
	start map[string]types.AttributeValue
	buf   []map[string]types.AttributeValue
	done  bool
}

// mergeShards returns the first want items of the shards together, in
// ascending order of the string attribute sortKey, each fetcher reading
// its shard in that order. It reads every shard in chunks of chunk items
// and refills the emptied ones in parallel before it takes the next item,
// so it reads at most want + len(fetches)·chunk items however they spread,
// in as few rounds as the busiest shard needs.
func mergeShards(ctx context.Context, fetches []fetcher, sortKey string, want, chunk int) ([]map[string]types.AttributeValue, error) {
	streams := make([]*shardStream, len(fetches))
	for i, f := range fetches {
		streams[i] = &shardStream{fetch: f}
	}
	out := make([]map[string]types.AttributeValue, 0, want)
	for len(out) < want {
		if err := refill(ctx, streams, chunk); err != nil {
			return nil, err
		}
		var head *shardStream
		for _, st := range streams {
			if len(st.buf) > 0 && (head == nil || sortValue(st.buf[0], sortKey) < sortValue(head.buf[0], sortKey)) {
				head = st
			}
		}
		if head == nil { // every shard is read to its end
			break
		}
		out = append(out, head.buf[0])
		head.buf = head.buf[1:]
	}
	return out, nil
}

// refill reads the next chunk of every stream that has none left and has
// not ended, in parallel.
func refill(ctx context.Context, streams []*shardStream, chunk int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, st := range streams {
		if len(st.buf) > 0 || st.done {
			continue
		}
		wg.Go(func() {
			// A filtered page may hold no match but a next key: read on
			// until there is one or the shard ends.
			for len(st.buf) == 0 && !st.done {
				items, next, err := st.fetch(ctx, st.start, int32(chunk))
				if err != nil {
					errs[i] = err
					return
				}
				st.buf, st.start, st.done = items, next, next == nil
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func sortValue(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
