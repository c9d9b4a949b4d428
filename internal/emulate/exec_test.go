package emulate_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestExecThroughFrontDoor runs commands in a container through the
// emulated stack's front door, as on AWS: the route goes to the
// ExecFunction. The exit code and both streams come back apart; another
// owner gets 404 and a template without exec: true 403; a command past its
// timeout is killed in the container (its process list has no trace of it
// after); 1 MiB of output comes back cut at the bound and said truncated;
// the history has each exec with its actor and without its output.
func TestExecThroughFrontDoor(t *testing.T) {
	t.Parallel()
	st := start(t, setup{})
	st.putTemplateDoc("shell", []string{"sh", "-c", "exec sleep 3600"}, map[string]any{"exec": true})
	st.putTemplate("closed", []string{"sh", "-c", "exec sleep 3600"})
	id := st.create(aliceToken, "shell", "shell")
	shut := st.create(aliceToken, "closed", "closed")
	st.wait(aliceToken, id, "running", time.Minute)
	st.wait(aliceToken, shut, "running", time.Minute)
	p := "/api/containers/" + id + "/exec"

	r := st.do(http.MethodPost, p, aliceToken, map[string]any{"command": []string{"sh", "-c", "printf 'pr%sted-ZQX\\n' in; echo err >&2; exit 3"}})
	got := r.json(t)
	if r.status != http.StatusOK || got["exit_code"] != float64(3) || got["stdout"] != "printed-ZQX\n" || got["stderr"] != "err\n" {
		t.Fatalf("exec: %d %s", r.status, r.body)
	}
	if r := st.do(http.MethodPost, p, bobToken, map[string]any{"command": []string{"true"}}); r.status != http.StatusNotFound {
		t.Errorf("another owner: %d %s", r.status, r.body)
	}
	if r := st.do(http.MethodPost, "/api/containers/"+shut+"/exec", aliceToken, map[string]any{"command": []string{"true"}}); r.status != http.StatusForbidden {
		t.Errorf("a template without exec: %d %s", r.status, r.body)
	}

	r = st.do(http.MethodPost, p, aliceToken, map[string]any{"command": []string{"head", "-c", "1048576", "/dev/zero"}})
	if got := r.json(t); r.status != http.StatusOK || got["truncated"] != true || len(got["stdout"].(string)) >= 1<<20 {
		t.Errorf("1 MiB of output: %d, truncated %v, %d bytes", r.status, got["truncated"], len(got["stdout"].(string)))
	}

	r = st.do(http.MethodPost, p, aliceToken, map[string]any{"command": []string{"sh", "-c", "sleep 301 & sleep 300"}, "timeout": "1s"})
	if got := r.json(t); r.status != http.StatusOK || got["timed_out"] != true || got["exit_code"] != nil {
		t.Errorf("exec past its timeout: %d %s", r.status, r.body)
	}
	r = st.do(http.MethodPost, p, aliceToken, map[string]any{"command": []string{"sh", "-c", `for d in /proc/[0-9]*; do tr '\0' ' ' < $d/cmdline; echo; done`}})
	ps, _ := r.json(t)["stdout"].(string)
	if r.status != http.StatusOK || !strings.Contains(ps, "sleep 3600") || strings.Contains(ps, "sleep 300") || strings.Contains(ps, "sleep 301") {
		t.Errorf("the container's processes after the timeout: %d %q", r.status, ps)
	}

	ev := st.do(http.MethodGet, "/api/containers/"+id+"/events?limit=100", aliceToken, nil)
	if ev.status != http.StatusOK || strings.Contains(string(ev.body), "printed-ZQX") ||
		!strings.Contains(string(ev.body), `"type":"ContainerExecFinished"`) || !strings.Contains(string(ev.body), `"actor":"alice"`) {
		t.Errorf("history: %d %s; want the exec by alice, without its output", ev.status, ev.body)
	}
	if longestInvocation(st.logs.String(), "ExecFunction") == 0 {
		t.Errorf("the ExecFunction never ran")
	}
}
