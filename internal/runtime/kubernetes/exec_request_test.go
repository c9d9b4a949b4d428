package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// recorded is one request that went through the recording proxy, and the
// API server's answer to it.
type recorded struct {
	method, path string
	query        url.Values
	upgrade      string
	status       int
}

// TestExecRequest: what berth sends to run a command in a Pod, recorded on
// its way to the real kube-apiserver. kwok's nodes run no process and
// serve no exec: the API server accepts the request, upgrades it and dials
// the node's kubelet (127.0.0.1:10250 on the test cluster), where nothing
// listens, so the command never runs here (the conformance case checks
// that the failure names the operation). This checks the request
// the API server receives and accepts: the pods/exec subresource of the
// instance's Pod in berth's namespace, on its main container, with stdin,
// stdout and stderr and no TTY, the command under env(1) with the
// request's variables and the exec's marker, over WebSocket first
// (falling back to SPDY where the upgrade fails), and the API server
// letting berth's Role through to the kubelet hop (no 401, 403 or 404).
func TestExecRequest(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{})
	ctx := testenv.Context(t, 90*time.Second)
	inst := k.instance()
	ref, err := k.Create(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := k.Inspect(ctx, ref)
		if err == nil && st.Phase == runtime.PhaseRunning {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the pod never ran: %+v, %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []recorded
	proxy := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			mu.Lock()
			seen = append(seen, recorded{method: r.In.Method, path: r.In.URL.Path, query: r.In.URL.Query(), upgrade: r.In.Header.Get("Upgrade")})
			mu.Unlock()
		},
		ModifyResponse: func(resp *http.Response) error {
			mu.Lock()
			seen[len(seen)-1].status = resp.StatusCode
			mu.Unlock()
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	via, err := kubernetes.New(config.Kubernetes{Clusters: []config.KubernetesCluster{{Name: ref.Node, Kubeconfig: kc, Namespace: k.namespace}}},
		kubernetes.Options{Scope: k.scope})
	if err != nil {
		t.Fatal(err)
	}

	_, err = via.Exec(ctx, ref, runtime.ExecSpec{Command: []string{"sh", "-c", "cat; echo $K"}, Stdin: []byte("x"),
		Env: map[string]string{"K": "v"}, Timeout: 20 * time.Second, OutputLimit: 1024, Marker: "01MARKER"})
	var re *runtime.Error
	if !errors.As(err, &re) || re.Op != "exec" || runtime.IsNotFound(err) || runtime.IsConflict(err) {
		t.Errorf("exec on kwok: %v; want the kubelet hop's failure, naming the operation", err)
	}

	mu.Lock()
	defer mu.Unlock()
	var execs []recorded
	for _, r := range seen {
		if r.path == fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/exec", k.namespace, podNameOf(t, k, ref)) {
			execs = append(execs, r)
		}
	}
	if len(execs) == 0 {
		t.Fatalf("no pods/exec request reached the API server; requests: %+v", seen)
	}
	wantCmd := []string{"env", "K=v", runtime.ExecMarkerEnv + "=01MARKER", "sh", "-c", "cat; echo $K"}
	for i, r := range execs {
		q := r.query
		if !slices.Equal(q["command"], wantCmd) || q.Get("container") != "main" || q.Get("stdin") != "true" ||
			q.Get("stdout") != "true" || q.Get("stderr") != "true" || q.Get("tty") == "true" {
			t.Errorf("exec request %d: %s %s?%s; want command %q on main with stdin, stdout, stderr, no tty", i, r.method, r.path, q.Encode(), wantCmd)
		}
		if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden || r.status == http.StatusNotFound {
			t.Errorf("exec request %d: the API server answered %d: berth's Role or the pod's name is wrong", i, r.status)
		}
	}
	if first := execs[0]; first.method != http.MethodGet || first.upgrade != "websocket" {
		t.Errorf("the first exec request: %s with Upgrade %q; want a WebSocket GET", first.method, first.upgrade)
	}
	t.Logf("exec requests: %+v; the answer: %v", execs, err)
}

// podNameOf is the name of ref's Pod, as the API lists it.
func podNameOf(t *testing.T, k *kube, ref runtime.Ref) string {
	t.Helper()
	st, err := k.Inspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return st.Name
}
