package kubernetes_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// TestPlacementFromTheWatch: while Watch runs, placement answers from the
// watch's informer without an API call (an earlier attempt's Pod found by
// it too), and a cluster that stops answering is still unavailable (the
// instance stays pending, as runtimetest's ErrorKinds/NodeDown wants), and
// answered from the watch again once it is back. The cluster is the real
// test cluster behind a TCP relay that the test cuts and restores.
func TestPlacementFromTheWatch(t *testing.T) {
	t.Parallel()
	relay := newRelay(t, apiServerAddr(t))
	var calls atomic.Int64
	count := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return rt.RoundTrip(r)
		})
	}
	k := newKube(t, kubernetes.Options{WrapTransport: count}, config.KubernetesCluster{
		Name: "k1", Kubeconfig: relayKubeconfig(t, relay.addr), Namespace: testenv.KubeNamespace(t)})
	ctx := testenv.Context(t, 2*time.Minute)

	earlier := k.instance()
	ref, err := k.Create(ctx, earlier)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	k.waitState(t, ref, "running", func(s runtime.State) bool { return s.Phase == runtime.PhaseRunning })

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := k.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range events { //nolint:revive // drained: the monitor's side is not what this test looks at
		}
	}()

	// placeQuietly places inst until an answer costs no API call (the
	// informer has synced), and returns that answer.
	placeQuietly := func(what string, id string, inst func() (string, error)) string {
		t.Helper()
		for {
			before := calls.Load()
			node, err := inst()
			if err == nil && calls.Load() == before {
				return node
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: placement still calls the API server (last: %q, %v)", what, node, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fresh := k.instance()
	placeFresh := func() (string, error) { return k.Place(ctx, fresh) }
	if node := placeQuietly("synced", fresh.ID, placeFresh); node != "k1" {
		t.Errorf("fresh instance placed on %q, want k1", node)
	}
	if node := placeQuietly("earlier attempt", earlier.ID, func() (string, error) { return k.Place(ctx, earlier) }); node != "k1/kwok-node-0" {
		t.Errorf("instance with a Pod placed on %q, want its Pod's node k1/kwok-node-0", node)
	}

	relay.cut()
	for {
		_, err := k.Place(ctx, fresh)
		if runtime.IsUnavailable(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("place with the cluster cut off: %v, want unavailable", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Once the cut is seen, every placement says so until the cluster is back.
	for range 5 {
		if _, err := k.Place(ctx, fresh); !runtime.IsUnavailable(err) {
			t.Fatalf("place with the cluster cut off: %v, want unavailable", err)
		}
	}

	relay.restore()
	if node := placeQuietly("restored", fresh.ID, placeFresh); node != "k1" {
		t.Errorf("fresh instance placed on %q after the cluster came back, want k1", node)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiServerAddr is host:port of the test cluster's API server.
func apiServerAddr(t *testing.T) string {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// relayKubeconfig is the test user's kubeconfig with the server at addr.
func relayKubeconfig(t *testing.T, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = addr
		c.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// relay forwards TCP connections on addr to target until cut, which closes
// its listener and every connection (as a stopped API server's kernel
// does); restore listens on the same address again.
type relay struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newRelay(t *testing.T, target string) *relay {
	r := &relay{t: t, addr: testenv.FreeAddr(t), target: target, conns: map[net.Conn]bool{}}
	r.restore()
	t.Cleanup(r.cut)
	return r
}

func (r *relay) restore() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.forward(c)
		}
	}()
}

func (r *relay) forward(c net.Conn) {
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !r.track(c, up) {
		return
	}
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// track records a relayed pair, or closes it when the relay was cut
// meanwhile.
func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = true
	}
	return true
}

func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		if err := r.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			r.t.Errorf("closing the relay: %v", err)
		}
		r.ln = nil
	}
	for c := range r.conns {
		_ = c.Close()
		delete(r.conns, c)
	}
}
