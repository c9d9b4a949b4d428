package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// flaky wraps a real store; while down is set, reads and writes fail the
// way a backend does when it cannot be reached.
type flaky struct {
	store.Store
	down atomic.Bool
}

func (f *flaky) err(op string) error { return fmt.Errorf("%s: %w", op, store.ErrUnavailable) }

func (f *flaky) GetInstance(ctx context.Context, id string) (container.Instance, error) {
	if f.down.Load() {
		return container.Instance{}, f.err("get")
	}
	return f.Store.GetInstance(ctx, id)
}

func (f *flaky) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	if f.down.Load() {
		return container.Instance{}, f.err("create")
	}
	return f.Store.CreateInstance(ctx, p)
}

func (f *flaky) ListInstances(ctx context.Context, q store.ListQuery) (store.Page[container.Instance], error) {
	if f.down.Load() {
		return store.Page[container.Instance]{}, f.err("list")
	}
	return f.Store.ListInstances(ctx, q)
}

// TestStoreUnavailable: a store that cannot be reached is 503 with a retry
// hint on every route that needs it, never a 500, and the service recovers.
func TestStoreUnavailable(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		fs := &flaky{Store: b.Open(t, time.Now)}
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		m := manager.New(manager.Options{Store: fs, MaxPending: 50, Logger: logger, BindRoots: []string{"/srv/berth"}})
		a := &api{t: t, m: m, store: fs, h: apicontract.Handler(t, httpapi.New(httpapi.Options{Manager: m, Logger: logger,
			Auth: httpapi.TokenAuth([]httpapi.TokenUser{{Token: admin, User: "root", Admin: true}, {Token: alice, User: "alice"}})}))}
		a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusCreated)
		in := a.create(alice, `{"template":"busybox"}`)
		fs.down.Store(true)
		for _, rt := range []struct{ method, path, body string }{
			{"POST", "/api/containers", `{"template":"busybox"}`},
			{"GET", "/api/containers", ""},
			{"GET", "/api/containers/" + in.ID, ""},
			{"POST", "/api/containers/" + in.ID + "/stop", ""},
			{"DELETE", "/api/containers/" + in.ID, ""},
		} {
			r := a.mustStatus(a.do(rt.method, rt.path, alice, rt.body, nil), http.StatusServiceUnavailable)
			if n, err := strconv.Atoi(r.Header().Get("Retry-After")); err != nil || n <= 0 || r.problem.RetryAfterSeconds != n {
				t.Errorf("%s %s: 503 without a retry hint: %v %s", rt.method, rt.path, r.Header(), r.Body)
			}
		}
		fs.down.Store(false)
		a.mustStatus(a.do("GET", "/api/containers/"+in.ID, alice, "", nil), http.StatusOK)
	})
}
