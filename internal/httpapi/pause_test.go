package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestPauseRoutes, on both stores and against docs/openapi.yaml: POST
// /pause and /resume answer 202 (status unchanged, the operation enqueued),
// 200 when the instance is there already, 409 with current_status from any
// other status, 404 to another owner (an admin may), 412 at a stale
// If-Match, and 409 naming the runtime for a Kubernetes instance.
func TestPauseRoutes(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPIManager(t, b, func(o *manager.Options) { o.Runtimes = []string{"docker", "kubernetes"} }, nil)
		cases := []struct {
			name   string
			to     []fsm.Status // drive the instance through these
			op     string
			token  string
			status int
		}{
			{"pause running", []fsm.Status{fsm.Running}, "pause", alice, http.StatusAccepted},
			{"pause running, admin", []fsm.Status{fsm.Running}, "pause", admin, http.StatusAccepted},
			{"pause running, another owner", []fsm.Status{fsm.Running}, "pause", bob, http.StatusNotFound},
			{"resume running", []fsm.Status{fsm.Running}, "resume", alice, http.StatusOK},
			{"pause paused", []fsm.Status{fsm.Running, fsm.Paused}, "pause", alice, http.StatusOK},
			{"resume paused", []fsm.Status{fsm.Running, fsm.Paused}, "resume", alice, http.StatusAccepted},
			{"pause pending", nil, "pause", alice, http.StatusConflict},
			{"resume pending", nil, "resume", alice, http.StatusConflict},
			{"pause stop_pending", []fsm.Status{fsm.Running, fsm.StopPending}, "pause", alice, http.StatusConflict},
			{"resume stop_pending", []fsm.Status{fsm.Running, fsm.Paused, fsm.StopPending}, "resume", alice, http.StatusConflict},
			{"pause stopped", []fsm.Status{fsm.Running, fsm.StopPending, fsm.Stopped}, "pause", alice, http.StatusConflict},
			{"resume failed", []fsm.Status{fsm.Failed}, "resume", alice, http.StatusConflict},
		}
		for _, tc := range cases {
			inst := a.create(alice, `{"template":"busybox"}`)
			for _, to := range tc.to {
				inst = a.drive(inst.ID, to)
			}
			r := a.do("POST", "/api/containers/"+inst.ID+"/"+tc.op, tc.token, "", nil)
			if r.Code != tc.status {
				t.Errorf("%s: %d, want %d: %s", tc.name, r.Code, tc.status, r.Body)
				continue
			}
			switch tc.status {
			case http.StatusAccepted, http.StatusOK:
				if got := decode[container.Instance](t, r); got.Status != inst.Status {
					t.Errorf("%s: answered %s, want the status unchanged (%s)", tc.name, got.Status, inst.Status)
				}
			case http.StatusConflict:
				if r.problem.CurrentStatus != inst.Status {
					t.Errorf("%s: current_status %q, want %s", tc.name, r.problem.CurrentStatus, inst.Status)
				}
			}
		}

		inst := a.drive(a.create(alice, `{"template":"busybox"}`).ID, fsm.Running)
		a.mustStatus(a.do("POST", "/api/containers/"+inst.ID+"/pause", alice, "", map[string]string{"If-Match": `"1"`}), http.StatusPreconditionFailed)
		a.mustStatus(a.do("POST", "/api/containers/nosuch/pause", alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", "/api/containers/"+inst.ID+"/pause", alice, "", nil), http.StatusMethodNotAllowed)

		a.mustStatus(a.do("PUT", "/api/templates/kube", admin, `{"runtime":"kubernetes","image":"x"}`, nil), http.StatusCreated)
		k := a.drive(a.create(alice, `{"template":"kube"}`).ID, fsm.Running)
		for _, op := range []string{"pause", "resume"} {
			r := a.mustStatus(a.do("POST", "/api/containers/"+k.ID+"/"+op, alice, "", nil), http.StatusConflict)
			if r.problem.Runtime != "kubernetes" {
				t.Errorf("%s on kubernetes: %s, want a problem naming the runtime", op, r.Body)
			}
		}
	})
}
