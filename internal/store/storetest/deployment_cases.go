package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/store"
)

// testDeployment: the deployment record starts empty at version 0, is
// written only at the version it replaces (a write at a stale version is
// ErrDeploymentChanged and writes nothing), and keeps what was written.
func testDeployment(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	d, err := s.GetDeployment(ctx)
	if err != nil || d.Version != 0 || d.Generation != "" || d.Settled {
		t.Fatalf("a new store's deployment record = %+v, %v; want a zero one", d, err)
	}
	since := c.Now()
	d1, err := s.PutDeployment(ctx, store.Deployment{Generation: "g1", Since: since})
	if err != nil || d1.Version != 1 || d1.UpdatedAt.IsZero() {
		t.Fatalf("first put: %+v, %v; want version 1 with updated_at", d1, err)
	}
	_, err = s.PutDeployment(ctx, store.Deployment{Generation: "g2", Since: since})
	wantErr(t, "a second first put", err, store.ErrDeploymentChanged)
	d1.Settled = true
	d2, err := s.PutDeployment(ctx, d1)
	if err != nil || d2.Version != 2 {
		t.Fatalf("second put: %+v, %v", d2, err)
	}
	_, err = s.PutDeployment(ctx, d1)
	wantErr(t, "a put at a stale version", err, store.ErrDeploymentChanged)
	got, err := s.GetDeployment(ctx)
	if err != nil || got.Generation != "g1" || !got.Since.Equal(since) || !got.Settled || got.Version != 2 {
		t.Fatalf("stored record = %+v, %v; want g1 settled at version 2 since %v", got, err, since)
	}
}

// testDeploymentRace: of writers racing from the same version, exactly one
// wins; every loser gets ErrDeploymentChanged.
func testDeploymentRace(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	for _, from := range []int64{0, 1} {
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.PutDeployment(ctx, store.Deployment{Generation: fmt.Sprintf("g%d-%d", from, i), Since: c.Now(), Version: from})
			}()
		}
		wg.Wait()
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrDeploymentChanged):
				t.Errorf("writer %d from version %d: %v", i, from, err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d writers won the race from version %d, want exactly 1", wins, from)
		}
		if d, err := s.GetDeployment(ctx); err != nil || d.Version != from+1 {
			t.Fatalf("record after the race from %d = %+v, %v", from, d, err)
		}
	}
}
