package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeWatch: through berth serve on a real engine, `berth containers
// watch` prints each status change of a container once, in order, as it
// happens, and ends by itself when the container's deletion is written;
// Ctrl-C (its context's end) ends it cleanly; an unknown container is 404.
func TestServeWatch(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{})
	e.start()
	e.putTemplates()
	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}

	inst := e.create("sleeper")
	done := make(chan cliResult, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := cliMain(context.Background(), []string{"containers", "watch", inst.ID, "--interval", "100ms"},
			strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
		done <- cliResult{out.String(), errOut.String(), code}
	}()
	e.waitFor(inst.ID, "running", 2*time.Minute)
	e.must(e.call("POST", "/api/containers/"+inst.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(inst.ID, "stopped", 2*time.Minute)
	e.must(e.call("DELETE", "/api/containers/"+inst.ID, aliceToken, nil), http.StatusAccepted)
	var r cliResult
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("watch did not end after the deletion\nserver log:\n%s", tail(e.logs.String(), 4000))
	}
	r.check(t, 0, nil, nil)
	want := []string{"- -> pending", "pending -> creating", "creating -> running", "running -> stop_pending",
		"stop_pending -> stopping", "stopping -> stopped", "stopped -> delete_pending", "delete_pending -> deleting", "deleted"}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(want) {
		t.Fatalf("watch printed %d lines; want %d, one per change:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], "  "+w+"  ") {
			t.Errorf("line %d = %q; want the change %q", i+1, lines[i], w)
		}
	}

	// Ctrl-C: the context ends, the watch returns 0.
	other := e.create("sleeper")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan int, 1)
	go func() {
		stopped <- cliMain(ctx, []string{"containers", "watch", other.ID}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{},
			func(k string) string { return env[k] })
	}()
	e.waitFor(other.ID, "running", 2*time.Minute)
	cancel()
	select {
	case code := <-stopped:
		if code != 0 {
			t.Errorf("watch ended by Ctrl-C exited %d; want 0", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("watch did not end when its context did")
	}
	runBerth(t, env, "", "containers", "watch", "01JDQ8NOSUCHC0NTA1NER00000").check(t, 1, nil, []string{"404"})
}
