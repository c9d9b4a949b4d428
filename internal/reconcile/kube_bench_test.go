package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// countingTransport counts the HTTP requests a runtime sends its API server.
type countingTransport struct {
	n    *atomic.Int64
	next http.RoundTripper
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// BenchmarkReconcilePassKubernetes counts the Kubernetes API calls of one
// reconcile pass over many running instances with their Pods on the test
// cluster (real kube-apiserver, kwok node), on the embedded store: the
// pass lists each cluster once and asks nothing per Pod. It reports API
// calls per pass and the pass's duration.
func BenchmarkReconcilePassKubernetes(b *testing.B) {
	const n = 200
	kc, ns := testenv.Kubeconfig(b), testenv.KubeNamespace(b)
	scope := "rcb-" + strings.ToLower(container.NewID())
	var calls atomic.Int64
	rt, err := kubernetes.New(config.Kubernetes{Clusters: []config.KubernetesCluster{{Name: "k1", Kubeconfig: kc, Namespace: ns}}},
		kubernetes.Options{Scope: scope, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			WrapTransport: func(next http.RoundTripper) http.RoundTripper { return countingTransport{n: &calls, next: next} }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Ping(ctx); err != nil {
		testenv.Missing(b, "a Kubernetes API server", err.Error())
	}
	b.Cleanup(func() {
		states, _ := rt.List(context.Background())
		for _, st := range states {
			_ = rt.Delete(context.Background(), st.Ref)
		}
	})
	st := teststores.Bolt(b, time.Now)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: st, MaxPending: n, Runtimes: []string{container.RuntimeKubernetes}, Logger: quiet})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "k",
		Runtime: container.RuntimeKubernetes, Image: "registry.invalid/berth/test:1", Command: []string{"sleep", "infinity"}}); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "k"}, nil, "req-"+strconv.Itoa(i))
			if err != nil {
				b.Error(err)
				return
			}
			inst := res.Instance
			ref, err := rt.Create(ctx, inst)
			if err != nil {
				b.Error(err)
				return
			}
			for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
				inst, err = st.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: to,
					Update: func(in *container.Instance) {
						in.RuntimeNodeName = ref.Node
						now := time.Now().UTC()
						in.StartedAt = &now
					}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		states, err := rt.List(ctx)
		running := 0
		for _, s := range states {
			if s.Phase == runtime.PhaseRunning {
				running++
			}
		}
		if err == nil && running == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d pods running after 2 minutes (%v)", running, n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rc, err := reconcile.New(reconcile.Options{Manager: m, Store: st, Runtimes: []runtime.Runtime{rt}, Scope: scope, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	calls.Store(0)
	b.ResetTimer()
	for range b.N {
		rep, err := rc.Run(ctx)
		if err != nil || rep.Errors > 0 || rep.Actions() != 0 || rep.Instances != n {
			b.Fatalf("pass: %+v, %v", rep, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(calls.Load())/float64(b.N), "api-calls/pass")
	b.ReportMetric(float64(n), "pods")
}
