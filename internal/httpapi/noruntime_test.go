package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// newAPINodes is an API whose manager knows the deployment's nodes.
func newAPINodes(t *testing.T, b teststores.Backend, runtimes []string, nodes []manager.Node) *api {
	t.Helper()
	s := b.Open(t, time.Now)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: s, MaxPending: 2, Runtimes: runtimes, BindRoots: []string{"/srv/berth"},
		Logger: logger, Nodes: nodes, NodesKnown: true})
	h := httpapi.New(httpapi.Options{Manager: m, Logger: logger, WaitMax: 25 * time.Second,
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{{Token: admin, User: "root", Admin: true}, {Token: alice, User: "alice"}}),
		Health: func(context.Context) (bool, any) {
			return true, map[string]any{"ok": true, "status": "ready", "store": map[string]any{"ok": true}}
		}})
	return &api{t: t, h: apicontract.Handler(t, h), m: m, store: s}
}

// TestNoRuntimeConfigured: a deployment with no Docker host and no
// Kubernetes cluster serves, but says at once what is missing: /readyz is
// a 503 naming it (to anyone: it names configuration keys only), a
// template PUT is a 422, a create a 503 that takes no admission slot (so
// that more creates than create_queue_max_pending are each refused the
// same way rather than queued behind ones that can never run).
func TestNoRuntimeConfigured(t *testing.T) {
	for _, b := range teststores.All {
		t.Run(b.Name, func(t *testing.T) {
			a := newAPINodes(t, b, []string{"docker", "kubernetes"}, nil)
			r := a.mustStatus(a.do("GET", "/readyz", "", "", nil), http.StatusServiceUnavailable)
			for _, want := range []string{"not ready", "no runtime configured", "docker.hosts", "kubernetes.clusters"} {
				if !strings.Contains(r.problem.Detail, want) {
					t.Errorf("/readyz detail %q lacks %q", r.problem.Detail, want)
				}
			}
			r = a.mustStatus(a.do("GET", "/healthz", admin, "", nil), http.StatusOK)
			if body := r.Body.String(); !strings.Contains(body, `"status":"not ready"`) || !strings.Contains(body, `"runtimes"`) {
				t.Errorf("/healthz: %s", body)
			}
			r = a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusUnprocessableEntity)
			if len(r.problem.Errors) != 1 || r.problem.Errors[0].Field != "runtime" || !strings.Contains(r.problem.Errors[0].Message, "docker.hosts is empty") {
				t.Errorf("PUT: %+v", r.problem)
			}
			for i := range 4 { // twice create_queue_max_pending
				r = a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`, nil), http.StatusServiceUnavailable)
				if !strings.Contains(r.problem.Detail, "no runtime configured") {
					t.Errorf("create %d: %+v", i, r.problem)
				}
			}
			if n, err := a.store.AdmissionCount(context.Background()); err != nil || n != 0 {
				t.Errorf("admission slots held: %d, %v", n, err)
			}
		})
	}
}

// TestTemplateNeedsANode: with nodes known, a template must name a runtime
// that has one, and literal host_labels that one of its nodes carries.
func TestTemplateNeedsANode(t *testing.T) {
	a := newAPINodes(t, teststores.All[0], []string{"docker", "kubernetes"}, []manager.Node{
		{Kind: "docker", Name: "h1", Labels: map[string]string{"disk": "ssd"}},
	})
	a.mustStatus(a.do("GET", "/readyz", "", "", nil), http.StatusOK)
	cases := []struct {
		name, body string
		want       int
		field, msg string
	}{
		{"docker", `{"runtime":"docker","image":"busybox:1"}`, http.StatusCreated, "", ""},
		{"labelled", `{"runtime":"docker","image":"busybox:1","scheduling":{"host_labels":{"disk":"ssd"}}}`, http.StatusCreated, "", ""},
		{"variable-label", `{"runtime":"docker","image":"busybox:1","scheduling":{"host_labels":{"owner":"$USERID"}}}`, http.StatusCreated, "", ""},
		{"no-such-label", `{"runtime":"docker","image":"busybox:1","scheduling":{"host_labels":{"disk":"hdd"}}}`,
			http.StatusUnprocessableEntity, "scheduling.host_labels", "no Docker host of this deployment has the labels disk=hdd"},
		{"kube", `{"runtime":"kubernetes","image":"busybox:1"}`, http.StatusUnprocessableEntity, "runtime", "kubernetes.clusters is empty"},
		{"not-allowed", `{"runtime":"podman","image":"busybox:1"}`, http.StatusUnprocessableEntity, "runtime", "must be one of"},
	}
	for _, tc := range cases {
		r := a.mustStatus(a.do("PUT", "/api/templates/"+tc.name, admin, tc.body, nil), tc.want)
		if tc.field == "" {
			continue
		}
		if len(r.problem.Errors) != 1 || r.problem.Errors[0].Field != tc.field || !strings.Contains(r.problem.Errors[0].Message, tc.msg) {
			t.Errorf("%s: %+v", tc.name, r.problem.Errors)
		}
	}
	a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"docker"}`, nil), http.StatusAccepted)
}
