package runtimetest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// kindCall is one Runtime call and the error kind it must answer with.
type kindCall struct {
	name string
	call func(ctx context.Context, rt runtime.Runtime) error
	want error
}

// callsOn are the calls that address an object on node, each expecting want.
func callsOn(node string, want error) []kindCall {
	ref := runtime.Ref{InstanceID: container.NewID(), Node: node}
	return []kindCall{
		{"start", func(ctx context.Context, rt runtime.Runtime) error { return rt.Start(ctx, ref) }, want},
		{"stop", func(ctx context.Context, rt runtime.Runtime) error { return rt.Stop(ctx, ref, 0) }, want},
		{"inspect", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Inspect(ctx, ref); return err }, want},
	}
}

// check runs calls against rt and asserts each error's kind, that it is a
// *runtime.Error naming its operation, and that no other kind matches.
func check(t *testing.T, ctx context.Context, rt runtime.Runtime, calls []kindCall) {
	t.Helper()
	kinds := []error{runtime.ErrNotFound, runtime.ErrConflict, runtime.ErrUnavailable, runtime.ErrFailed, runtime.ErrInvalid}
	for _, c := range calls {
		err := c.call(ctx, rt)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		for _, k := range kinds {
			if !errors.Is(k, c.want) && errors.Is(err, k) {
				t.Errorf("%s: %v is both %v and %v", c.name, err, c.want, k)
			}
		}
		var re *runtime.Error
		if !errors.As(err, &re) || re.Op == "" {
			t.Errorf("%s: %v is not a *runtime.Error naming its operation", c.name, err)
		}
	}
}

// testErrorKinds: both runtimes answer the same kind for the same trouble,
// by the contract of runtime/errors.go: a node that is not configured is
// invalid (no retry makes it appear), a node that does not answer is
// unavailable (wait for it), and a node whose answer the client cannot
// read is failed (bounded retries: it may be this request's own fault).
func testErrorKinds(t *testing.T, h Harness) {
	if h.At == nil {
		t.Fatal("the harness has no At: the error-kind cases need a runtime at a given address")
	}
	t.Run("UnknownNode", func(t *testing.T) {
		ctx := testenv.Context(t, h.Timeout)
		inst := h.Running(t)
		inst.RuntimeNodeName = "no-such-node"
		calls := append(callsOn("no-such-node", runtime.ErrInvalid),
			kindCall{"place", func(ctx context.Context, rt runtime.Runtime) error {
				_, err := rt.Place(ctx, inst)
				return err
			}, runtime.ErrInvalid},
			kindCall{"create", func(ctx context.Context, rt runtime.Runtime) error {
				_, err := rt.Create(ctx, inst)
				return err
			}, runtime.ErrInvalid})
		check(t, ctx, h.Runtime, calls)
	})
	t.Run("NoNodeHasTheLabels", func(t *testing.T) {
		ctx := testenv.Context(t, h.Timeout)
		inst := h.Running(t)
		inst.Spec.Scheduling.HostLabels = map[string]string{"berth-test": "no-node-has-this"}
		check(t, ctx, h.Runtime, []kindCall{
			{"place", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Place(ctx, inst); return err }, runtime.ErrInvalid},
			{"create", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Create(ctx, inst); return err }, runtime.ErrInvalid},
		})
	})
	t.Run("NodeDown", func(t *testing.T) {
		ctx := testenv.Context(t, h.Timeout)
		// Nothing listens there: every call is refused before the node
		// could judge it.
		rt := h.At(t, "http://"+testenv.FreeAddr(t))
		inst := h.Running(t)
		calls := append(callsOn(AtNode, runtime.ErrUnavailable),
			kindCall{"place", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Place(ctx, inst); return err }, runtime.ErrUnavailable},
			kindCall{"create", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Create(ctx, inst); return err }, runtime.ErrUnavailable},
			kindCall{"list", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.List(ctx); return err }, runtime.ErrUnavailable},
			kindCall{"ping", func(ctx context.Context, rt runtime.Runtime) error { return rt.Ping(ctx) }, runtime.ErrUnavailable})
		check(t, ctx, rt, calls)
	})
	t.Run("UnreadableAnswer", func(t *testing.T) {
		ctx := testenv.Context(t, h.Timeout)
		// A real HTTP server that answers every call with 200 and whole
		// JSON of a shape no call expects: an answer, but one no client
		// can type. (A body cut short would read as a connection cut:
		// unavailable.)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/_ping") {
				// A Docker client negotiates its API version first.
				w.Header().Set("Api-Version", "1.44")
				_, _ = w.Write([]byte("OK"))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`["not", "what", "was", "asked"]`))
		}))
		t.Cleanup(srv.Close)
		rt := h.At(t, srv.URL)
		// The calls that read an answer's body (a Docker start or stop
		// reads none).
		ref := runtime.Ref{InstanceID: container.NewID(), Node: AtNode}
		check(t, ctx, rt, []kindCall{
			{"inspect", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.Inspect(ctx, ref); return err }, runtime.ErrFailed},
			{"list", func(ctx context.Context, rt runtime.Runtime) error { _, err := rt.List(ctx); return err }, runtime.ErrFailed},
		})
	})
}

// AtNode is the name of the one node of a runtime Harness.At makes.
const AtNode = "n1"
