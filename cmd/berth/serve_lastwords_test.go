package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestServeLastWords: through berth serve on a real engine, a group member
// that fails is deleted by dag_node_cleanup_on_failed, and its history
// still says why it ended, in its own last lines, through the events route
// and `berth containers events`; the lines are in none of berth's own logs.
func TestServeLastWords(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{containerKeys: "dag_node_cleanup_on_failed: delete\n"})
	e.start()
	const why = "why-6f1c: the disk is full"
	e.must(e.call("PUT", "/api/templates/dying", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "echo working; echo '" + why + "' >&2; exit 2"}}), http.StatusCreated)
	inst := e.member("dying", "dag")
	e.until("the failed member deleted by its policy", time.Minute, func() bool { return e.deleted(inst.ID) })

	var failed *container.Event
	evs := e.events(inst.ID)
	for i, ev := range evs {
		if ev.Type == container.EventFailed {
			failed = &evs[i]
		}
	}
	if failed == nil || failed.LastWords == nil || failed.To != fsm.Failed {
		t.Fatalf("no last words on the failure: %+v", evs)
	}
	got := map[string]string{}
	for _, l := range failed.LastWords.Lines {
		got[l.Stream] += l.Text
	}
	if got["stdout"] != "working" || got["stderr"] != why || failed.LastWords.Truncated {
		t.Fatalf("last words: %+v", failed.LastWords)
	}

	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	runBerth(t, env, "", "containers", "events", inst.ID).check(t, 0,
		[]string{"ContainerFailed", "Last words (event ", "  stderr | " + why, "  stdout | working"}, nil)
	// Another user reads no history of alice's container, last words included.
	e.must(e.call("GET", "/api/containers/"+inst.ID+"/events", bobToken, nil), http.StatusNotFound)

	for name, out := range map[string]string{"log": e.logs.String(), "stdout (metrics)": e.out.String()} {
		if strings.Contains(out, "why-6f1c") {
			t.Errorf("the container's output is in berth's own %s", name)
		}
	}
}
