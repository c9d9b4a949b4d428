package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
)

// execAnswer is POST /api/containers/{id}/exec's answer as a test reads it.
type execAnswer struct {
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
}

func (e *serveEnv) exec(id, token string, body any, want int) (execAnswer, apiResp) {
	e.t.Helper()
	r := e.must(e.call("POST", "/api/containers/"+id+"/exec", token, body), want)
	var a execAnswer
	if want == http.StatusOK {
		if err := json.Unmarshal(r.body, &a); err != nil {
			e.t.Fatalf("exec answer %s: %v", r.body, err)
		}
	}
	return a, r
}

// putExecTemplate publishes "shell": a sleeper whose template allows exec.
func (e *serveEnv) putExecTemplate() {
	e.t.Helper()
	e.must(e.call("PUT", "/api/templates/shell", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exec sleep 3600"}, Exec: true}), http.StatusCreated)
}

// TestServeExec: POST /api/containers/{id}/exec through berth serve on the
// real engine. The exit code and both streams come back apart, for the
// owner and an admin; another owner gets 404, a template without exec:
// true 403, a bad request 422; 1 MiB of output comes back cut at
// server.exec_output_limit and said truncated; a command past its timeout
// is killed in the container (its process list has no trace of it after);
// a second exec in a container whose bound is one is 429 with Retry-After;
// each exec is in the history with its actor, command and exit code and
// without its output, stdin or env values; a stopped container is 409. The
// CLI passes the command's exit code through.
func TestServeExec(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{})
	e.env = []string{"BERTH_SERVER_EXEC_OUTPUT_LIMIT=65536", "BERTH_SERVER_MAX_EXECS_PER_CONTAINER=1", "BERTH_SERVER_EXEC_MAX_TIMEOUT=20s"}
	e.start()
	e.putTemplates()
	e.putExecTemplate()
	in := e.create("shell")
	closed := e.create("sleeper")
	e.waitFor(in.ID, fsm.Running, time.Minute)
	e.waitFor(closed.ID, fsm.Running, time.Minute)

	// What the command prints is not in the command: the history, which
	// holds the command, must not hold it.
	const secretOut, secretIn, secretEnv = "printed-ZQX", "stdin-WVU", "env-value-TSR"
	stdin := secretIn + "\n"
	for _, tok := range []string{aliceToken, adminToken} {
		a, _ := e.exec(in.ID, tok, map[string]any{"command": []string{"sh", "-c", `printf 'pr%sted-ZQX\n' in; cat; echo "$V" >&2; exit 3`},
			"stdin": stdin, "env": map[string]string{"V": secretEnv}, "timeout": "15s"}, http.StatusOK)
		if a.ExitCode == nil || *a.ExitCode != 3 || a.Stdout != secretOut+"\n"+secretIn+"\n" || a.Stderr != secretEnv+"\n" || a.Truncated || a.TimedOut {
			t.Errorf("exec as %s: %+v; want exit 3, stdout and stdin on stdout, the env on stderr", tok, a)
		}
	}
	body := map[string]any{"command": []string{"true"}}
	e.exec(in.ID, bobToken, body, http.StatusNotFound)
	_, r := e.exec(closed.ID, aliceToken, body, http.StatusForbidden)
	if !strings.Contains(string(r.body), "exec: true") {
		t.Errorf("403 should say what would allow it: %s", r.body)
	}
	e.exec(closed.ID, adminToken, body, http.StatusForbidden)
	for _, bad := range []map[string]any{{"command": []string{}}, {"command": []string{"true"}, "timeout": "21s"},
		{"command": []string{"true"}, "env": map[string]string{"BERTH_EXEC_ID": "x"}}, {"command": []string{"true"}, "timeout": "soon"}} {
		e.exec(in.ID, aliceToken, bad, http.StatusUnprocessableEntity)
	}

	big, _ := e.exec(in.ID, aliceToken, map[string]any{"command": []string{"head", "-c", "1048576", "/dev/zero"}}, http.StatusOK)
	if !big.Truncated || len(big.Stdout) != 65536 || big.ExitCode == nil || *big.ExitCode != 0 {
		t.Errorf("1 MiB of output: %d bytes kept, truncated %v, exit %v; want 65536, truncated, 0", len(big.Stdout), big.Truncated, big.ExitCode)
	}

	testServeExecTimeout(t, e, in.ID)
	testServeExecBusy(t, e, in.ID)
	testServeExecHistory(t, e, in.ID, secretOut, secretIn, secretEnv)

	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	runBerth(t, env, "", "containers", "exec", in.ID, "--", "sh", "-c", "echo hi; echo oops >&2; exit 7").check(t, 7, []string{"hi"}, []string{"oops"})
	runBerth(t, env, "piped", "containers", "exec", in.ID, "--stdin", "--", "cat").check(t, 0, []string{"piped"}, nil)
	runBerth(t, env, "", "containers", "exec", in.ID, "--timeout", "1s", "--", "sleep", "30").check(t, cliExitTimedOut, nil, []string{"timed out"})
	runBerth(t, env, "", "containers", "exec", in.ID).check(t, cliExitUsage, nil, []string{"--"})

	e.must(e.call("POST", "/api/containers/"+in.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(in.ID, fsm.Stopped, time.Minute)
	_, r = e.exec(in.ID, aliceToken, body, http.StatusConflict)
	if !strings.Contains(string(r.body), string(fsm.Stopped)) {
		t.Errorf("409 of a stopped container should name its status: %s", r.body)
	}
	e.stop()
}

// testServeExecTimeout: a command (and a child it started) past its
// timeout is answered timed out and is gone from the container.
func testServeExecTimeout(t *testing.T, e *serveEnv, id string) {
	start := time.Now()
	a, _ := e.exec(id, aliceToken, map[string]any{"command": []string{"sh", "-c", "sleep 301 & sleep 300"}, "timeout": "1s"}, http.StatusOK)
	if !a.TimedOut || a.ExitCode != nil || a.DurationMS < 1000 {
		t.Errorf("exec past its timeout: %+v; want timed out, no exit code, ≥ 1000 ms", a)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("a 1 s exec took %s to answer", took)
	}
	ps, _ := e.exec(id, aliceToken, map[string]any{"command": []string{"sh", "-c", `for d in /proc/[0-9]*; do tr '\0' ' ' < $d/cmdline; echo; done`}}, http.StatusOK)
	if !strings.Contains(ps.Stdout, "sleep 3600") {
		t.Fatalf("the process list does not show the container's own process: %q", ps.Stdout)
	}
	if strings.Contains(ps.Stdout, "sleep 300") || strings.Contains(ps.Stdout, "sleep 301") {
		t.Errorf("the timed-out command is still running in the container:\n%s", ps.Stdout)
	}
}

// testServeExecBusy: with server.max_execs_per_container at 1, an exec
// while another runs in the same container is 429 with Retry-After.
func testServeExecBusy(t *testing.T, e *serveEnv, id string) {
	done := make(chan apiResp, 1)
	go func() {
		r, _ := e.do("POST", "/api/containers/"+id+"/exec", aliceToken, map[string]any{"command": []string{"sleep", "30"}, "timeout": "3s"})
		done <- r
	}()
	// The first exec holds its place once its start is in the history.
	deadline := time.Now().Add(30 * time.Second)
	for n := execEvents(t, e, id, container.EventExecStarted); execEvents(t, e, id, container.EventExecStarted) == n; {
		if time.Now().After(deadline) {
			t.Fatal("the first exec's start never reached the history")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := e.must(e.call("POST", "/api/containers/"+id+"/exec", aliceToken, map[string]any{"command": []string{"true"}}), http.StatusTooManyRequests)
	var p httpapi.Problem
	if err := json.Unmarshal(r.body, &p); err != nil || r.header.Get("Retry-After") == "" || p.RetryAfterSeconds < 1 {
		t.Errorf("429: Retry-After %q, %s", r.header.Get("Retry-After"), r.body)
	}
	if first := <-done; first.status != http.StatusOK {
		t.Errorf("the first exec: %d %s", first.status, first.body)
	}
	e.exec(id, aliceToken, map[string]any{"command": []string{"true"}}, http.StatusOK)
}

// execEvents counts id's events of type typ.
func execEvents(t *testing.T, e *serveEnv, id, typ string) int {
	n := 0
	for _, ev := range historyOf(t, e, id) {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func historyOf(t *testing.T, e *serveEnv, id string) []container.Event {
	t.Helper()
	r := e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", aliceToken, nil), http.StatusOK)
	var page struct {
		Items []container.Event `json:"items"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatalf("events %s: %v", r.body, err)
	}
	return page.Items
}

// testServeExecHistory: the history records each exec, started and ended,
// with its actor, its command and its exit code, and none of what it
// printed, read or was given as env values.
func testServeExecHistory(t *testing.T, e *serveEnv, id string, secrets ...string) {
	r := e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", aliceToken, nil), http.StatusOK)
	for _, s := range secrets {
		if strings.Contains(string(r.body), s) {
			t.Errorf("the history holds %q (output, stdin or an env value):\n%s", s, r.body)
		}
	}
	var byAdmin, byAlice, timedOut bool
	for _, ev := range historyOf(t, e, id) {
		if ev.Type != container.EventExecFinished {
			continue
		}
		if ev.From != fsm.Running || ev.To != fsm.Running {
			t.Errorf("exec event %d moved the status: %s → %s", ev.Seq, ev.From, ev.To)
		}
		if ev.ExitCode != nil && *ev.ExitCode == 3 && strings.Contains(ev.Message, "sh -c") {
			byAdmin = byAdmin || ev.Actor == "root"
			byAlice = byAlice || ev.Actor == "alice"
		}
		timedOut = timedOut || (ev.ExitCode == nil && strings.Contains(ev.Message, "timed out") && strings.Contains(ev.Message, "sleep 300"))
	}
	if !byAdmin || !byAlice || !timedOut {
		t.Errorf("history: exec by alice %v, by the admin %v, timed out %v; want all:\n%s", byAlice, byAdmin, timedOut, r.body)
	}
	if n, m := execEvents(t, e, id, container.EventExecStarted), execEvents(t, e, id, container.EventExecFinished); n != m || n < 5 {
		t.Errorf("%d exec starts and %d ends in the history; want one of each per exec", n, m)
	}
}
