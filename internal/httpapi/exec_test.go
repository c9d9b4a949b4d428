package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
)

// scriptedRunner stands where the runtimes run commands, so that the
// route's refusals, which come before any runtime is asked, and its
// mapping of a runtime's failures can be checked on both stores. It
// records what it was asked; gate, when set, holds each exec until closed.
// (Commands run on real runtimes: cmd/berth TestServeExec, the runtime
// conformance case Exec.)
type scriptedRunner struct {
	mu     sync.Mutex
	specs  []runtime.ExecSpec
	err    error
	gate   chan struct{}
	inside chan struct{}
}

func (s *scriptedRunner) Exec(ctx context.Context, _ container.Instance, spec runtime.ExecSpec) (runtime.ExecResult, error) {
	s.mu.Lock()
	s.specs = append(s.specs, spec)
	gate, inside := s.gate, s.inside
	s.mu.Unlock()
	if gate != nil {
		inside <- struct{}{}
		<-gate
	}
	if s.err != nil {
		return runtime.ExecResult{}, s.err
	}
	return runtime.ExecResult{ExitCode: 3, Stdout: []byte("out\n"), Stderr: []byte("err\n"), Duration: 12 * time.Millisecond}, nil
}

func (s *scriptedRunner) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.specs)
}

// TestExecRoute: POST /api/containers/{id}/exec's answers, table-driven,
// on both stores: the refusals (422 for a bad request, 404 for another
// owner's container, 403 where the template does not allow exec, for
// admins too, 409 for an instance that is not running, 405 for another
// method, 501 without a runner) reach no runtime; a runtime's not-running
// is 409 and its failure 503; a run answers its exit code and both
// streams, and is two events in the history (actor and command, no
// output).
func TestExecRoute(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		run := &scriptedRunner{}
		a := newAPIWith(t, b, 50, func(o *httpapi.Options) {
			o.Exec = httpapi.ExecOptions{Runner: run, OutputLimit: 1024,
				Limits: manager.ExecLimits{MaxTimeout: 20 * time.Second, PerOwner: 4, PerContainer: 1}}
		})
		a.mustStatus(a.do("PUT", "/api/templates/shell", admin, strings.Replace(busyboxTemplate, `"labels"`, `"exec":true,"labels"`, 1), nil), http.StatusCreated)
		running := a.create(alice, `{"template":"shell"}`)
		a.drive(running.ID, fsm.Running)
		closed := a.create(alice, `{"template":"busybox"}`)
		a.drive(closed.ID, fsm.Running)
		pending := a.create(alice, `{"template":"shell"}`)
		path := func(id string) string { return "/api/containers/" + id + "/exec" }
		ok := `{"command":["ls","-l"]}`
		for _, c := range []struct {
			name, method, id, token, body string
			want                          int
		}{
			{"no command", "POST", running.ID, alice, `{"command":[]}`, http.StatusUnprocessableEntity},
			{"empty program", "POST", running.ID, alice, `{"command":[""]}`, http.StatusUnprocessableEntity},
			{"too many words", "POST", running.ID, alice, `{"command":["x"` + strings.Repeat(`,"a"`, manager.MaxExecArgs) + `]}`, http.StatusUnprocessableEntity},
			{"timeout past the most", "POST", running.ID, alice, `{"command":["true"],"timeout":"21s"}`, http.StatusUnprocessableEntity},
			{"timeout not a duration", "POST", running.ID, alice, `{"command":["true"],"timeout":"soon"}`, http.StatusUnprocessableEntity},
			{"berth's env", "POST", running.ID, alice, `{"command":["true"],"env":{"BERTH_EXEC_ID":"x"}}`, http.StatusUnprocessableEntity},
			{"bad env name", "POST", running.ID, alice, `{"command":["true"],"env":{"1X":"x"}}`, http.StatusUnprocessableEntity},
			{"unknown field", "POST", running.ID, alice, `{"command":["true"],"tty":true}`, http.StatusBadRequest},
			{"another owner's", "POST", running.ID, bob, ok, http.StatusNotFound},
			{"no such container", "POST", container.NewID(), alice, ok, http.StatusNotFound},
			{"no token", "POST", running.ID, "", ok, http.StatusUnauthorized},
			{"template without exec", "POST", closed.ID, alice, ok, http.StatusForbidden},
			{"template without exec, admin", "POST", closed.ID, admin, ok, http.StatusForbidden},
			{"not running", "POST", pending.ID, alice, ok, http.StatusConflict},
			{"another method", "GET", running.ID, alice, "", http.StatusMethodNotAllowed},
		} {
			r := a.do(c.method, path(c.id), c.token, c.body, nil)
			if r.Code != c.want {
				t.Errorf("%s: %d %s, want %d", c.name, r.Code, r.Body, c.want)
			}
		}
		if n := run.calls(); n != 0 {
			t.Fatalf("refused execs reached the runtime %d times", n)
		}

		for _, tok := range []string{alice, admin} {
			r := a.mustStatus(a.do("POST", path(running.ID), tok, `{"command":["sh","-c","exit 3"],"stdin":"in","env":{"K":"v"},"timeout":"2s"}`, nil), http.StatusOK)
			var got map[string]any
			if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || got["exit_code"] != float64(3) || got["stdout"] != "out\n" ||
				got["stderr"] != "err\n" || got["timed_out"] != false || got["duration_ms"] != float64(12) {
				t.Errorf("exec as %s: %s (%v)", tok, r.Body, err)
			}
		}
		if sp := run.specs[0]; sp.Timeout != 2*time.Second || string(sp.Stdin) != "in" || sp.Env["K"] != "v" || sp.OutputLimit != 1024 || sp.Marker == "" {
			t.Errorf("the runtime was asked %+v", sp)
		}
		evs := a.mustStatus(a.do("GET", "/api/containers/"+running.ID+"/events", alice, "", nil), http.StatusOK).Body.String()
		if strings.Count(evs, container.EventExecStarted) != 2 || strings.Count(evs, container.EventExecFinished) != 2 ||
			!strings.Contains(evs, `"actor":"root"`) || strings.Contains(evs, "out\\n") || strings.Contains(evs, `"in"`) {
			t.Errorf("history: %s", evs)
		}

		// One exec in the container at a time: a second is 429.
		run.gate, run.inside = make(chan struct{}), make(chan struct{}, 1)
		first := make(chan *resp, 1)
		go func() { first <- a.do("POST", path(running.ID), alice, ok, nil) }()
		<-run.inside
		r := a.mustStatus(a.do("POST", path(running.ID), alice, ok, nil), http.StatusTooManyRequests)
		if r.Header().Get("Retry-After") != "1" || r.problem.RetryAfterSeconds != 1 {
			t.Errorf("429: Retry-After %q, %+v", r.Header().Get("Retry-After"), r.problem)
		}
		close(run.gate)
		if r := <-first; r.Code != http.StatusOK {
			t.Errorf("the first exec: %d %s", r.Code, r.Body)
		}
		run.gate = nil

		for _, c := range []struct {
			err  error
			want int
		}{
			{runtime.Errorf(runtime.ErrConflict, "exec", running.ID, "h1", "the container is not running"), http.StatusConflict},
			{runtime.Errorf(runtime.ErrUnavailable, "exec", running.ID, "h1", "engine down at 10.0.0.7"), http.StatusServiceUnavailable},
		} {
			run.err = c.err
			r := a.do("POST", path(running.ID), alice, ok, nil)
			if r.Code != c.want || strings.Contains(r.Body.String(), "10.0.0.7") {
				t.Errorf("runtime %v: %d %s, want %d without the runtime's message", c.err, r.Code, r.Body, c.want)
			}
		}
	})
}

// TestExecRouteNotServed: a deployment without a runner (the api function
// on AWS) answers 501, after the owner check (another's container is 404).
func TestExecRouteNotServed(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		in := a.create(alice, `{"template":"busybox"}`)
		p := "/api/containers/" + in.ID + "/exec"
		a.mustStatus(a.do("POST", p, bob, `{"command":["true"]}`, nil), http.StatusNotFound)
		r := a.mustStatus(a.do("POST", p, alice, `{"command":["true"]}`, nil), http.StatusNotImplemented)
		if !strings.Contains(r.problem.Detail, "exec function") {
			t.Errorf("501 detail: %q", r.problem.Detail)
		}
	})
}
