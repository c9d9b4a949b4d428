package manager_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// reads wraps a real store and counts the reads a create may make.
type reads struct {
	store.Store
	templates, idempotency atomic.Int32
}

func (r *reads) GetTemplate(ctx context.Context, name string) (container.Template, error) {
	r.templates.Add(1)
	return r.Store.GetTemplate(ctx, name)
}

func (r *reads) GetIdempotency(ctx context.Context, owner, key string) (store.IdempotencyRecord, error) {
	r.idempotency.Add(1)
	return r.Store.GetIdempotency(ctx, owner, key)
}

// TestCreateFromCachedTemplate: creates read their template once, then
// build from the cached copy; a template another process (another Lambda
// instance: a second manager on the same store) replaced or deleted is
// noticed by the store's check, and the create follows the stored template.
// An Idempotency-Key costs no read unless the create fails, and a repeat
// answers as the first request did, even once its template is gone. On
// both stores.
func TestCreateFromCachedTemplate(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		ctx := context.Background()
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		shared := b.Open(t, nil)
		r := &reads{Store: shared}
		m := manager.New(manager.Options{Store: r, Logger: quiet, MaxPending: 100})
		other := manager.New(manager.Options{Store: shared, Logger: quiet, MaxPending: 100})
		admin := identity.Caller{User: "admin", Admin: true}
		alice := identity.Caller{User: "alice"}
		put := func(image string) {
			t.Helper()
			if _, _, err := other.PutTemplate(ctx, admin, container.Template{Name: "web", Runtime: container.RuntimeDocker, Image: image}); err != nil {
				t.Fatal(err)
			}
		}
		create := func(idem *manager.Idempotency) (manager.CreateResult, error) {
			return m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "web"}, idem, "req")
		}
		wantImage := func(want string, wantReads int32) {
			t.Helper()
			res, err := create(nil)
			if err != nil || res.Instance.Image != want {
				t.Fatalf("create = %q, %v; want image %q", res.Instance.Image, err, want)
			}
			if n := r.templates.Load(); n != wantReads {
				t.Fatalf("%d template reads, want %d", n, wantReads)
			}
		}

		put("busybox:1")
		wantImage("busybox:1", 1)
		wantImage("busybox:1", 1) // from the cache
		put("busybox:2")
		wantImage("busybox:2", 2) // the store refused the stale copy
		wantImage("busybox:2", 2)

		idem := &manager.Idempotency{Key: "k1", Hash: "h1", Response: func(in container.Instance) []byte { return []byte(in.ID) }}
		first, err := create(idem)
		if err != nil || first.Instance.ID == "" {
			t.Fatalf("idempotent create = %+v, %v", first, err)
		}
		if n := r.idempotency.Load(); n != 0 {
			t.Fatalf("%d idempotency reads for a first request, want 0", n)
		}
		if err := other.DeleteTemplate(ctx, admin, "web"); err != nil {
			t.Fatal(err)
		}
		again, err := create(idem)
		if err != nil || string(again.Replayed) != first.Instance.ID {
			t.Fatalf("repeat after its template was deleted = %+v, %v; want the first response replayed", again, err)
		}
		var verr *manager.ValidationError
		if _, err := create(nil); !errors.As(err, &verr) {
			t.Fatalf("create from a deleted template = %v, want a validation error", err)
		}
	})
}
