package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// TestServeStats: GET /api/containers/{id}/stats through berth serve reads
// a running container's usage from the real engine for its owner and an
// admin; another owner gets 404, and a stopped instance 409 with its
// status.
func TestServeStats(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{})
	e.start()
	e.putTemplates()
	in := e.create("sleeper")
	e.waitFor(in.ID, fsm.Running, time.Minute)
	p := "/api/containers/" + in.ID + "/stats"
	for _, tok := range []string{aliceToken, adminToken} {
		r := e.must(e.call("GET", p, tok, nil), http.StatusOK)
		var s runtime.Stats
		if err := json.Unmarshal(r.body, &s); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
		if s.At.IsZero() || s.Memory.UsageBytes == 0 || s.PIDs == nil || *s.PIDs < 1 || s.CPU.Cores < 0 {
			t.Errorf("stats %s: want a reading time, memory in use and processes", r.body)
		}
		var raw map[string]any
		_ = json.Unmarshal(r.body, &raw)
		for _, k := range []string{"cpu", "memory", "network", "block_io", "pids"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("stats %s: no %q", r.body, k)
			}
		}
	}
	e.must(e.call("GET", p, bobToken, nil), http.StatusNotFound)

	// The CLI: a table line under its header, or the API's object.
	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	runBerth(t, env, "", "containers", "stats", in.ID).check(t, 0, []string{"CPU (CORES)", "MEM LIMIT", "PIDS"}, nil)
	js := runBerth(t, env, "", "containers", "stats", in.ID, "-o", "json")
	var s runtime.Stats
	if err := json.Unmarshal([]byte(js.stdout), &s); js.code != 0 || err != nil || s.Memory.UsageBytes == 0 {
		t.Errorf("stats -o json: %d %q %q (%v)", js.code, js.stdout, js.stderr, err)
	}
	runBerth(t, env, "", "containers", "stats", in.ID, "--watch", "--every", "10ms").check(t, 2, nil, []string{"--every"})

	e.must(e.call("POST", "/api/containers/"+in.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(in.ID, fsm.Stopped, time.Minute)
	r := e.must(e.call("GET", p, aliceToken, nil), http.StatusConflict)
	var prob struct {
		CurrentStatus string `json:"current_status"`
	}
	if err := json.Unmarshal(r.body, &prob); err != nil || prob.CurrentStatus != string(fsm.Stopped) {
		t.Errorf("409 of a stopped instance: %s", r.body)
	}
	e.stop()
}
