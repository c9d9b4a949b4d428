package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// testConcurrentMarkDone: many items marked done at once (webhook
// deliveries finishing together; bolt shares one transaction between
// them) are each done when its call returns, an unknown one among them
// still answers ErrNotFound, and the others are not held back by it.
func testConcurrentMarkDone(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	hooks := make([]string, 24)
	for i := range hooks {
		hooks[i] = "wh-a"
	}
	_, ids := writeDeliveries(t, s, inst, hooks...)
	ids = append(ids, "no-such-item")
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.MarkDone(ctx, id, time.Now()); errs[i] != nil {
				return
			}
			// Done as soon as the call returned.
			if ob, err := s.GetOutbox(ctx, id); err != nil || ob.State != container.OutboxDone {
				errs[i] = errors.Join(err, errors.New("state "+string(ob.State)+" right after MarkDone"))
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		switch {
		case id == "no-such-item" && !errors.Is(errs[i], store.ErrNotFound):
			t.Errorf("MarkDone(unknown) = %v; want ErrNotFound", errs[i])
		case id != "no-such-item" && errs[i] != nil:
			t.Errorf("MarkDone(%s): %v", id, errs[i])
		}
	}
}
