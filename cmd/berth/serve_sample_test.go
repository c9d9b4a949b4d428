package main

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// TestServeSampleTemplateStops: the quickstart's sample template
// (testdata/templates/busybox.json) through `berth serve` on the real
// engine: created as the README does, it runs, and a stop ends it by its
// own SIGTERM handling with exit code 0, not by the kill after the stop
// grace (137), which is what a PID 1 without a handler gets.
func TestServeSampleTemplateStops(t *testing.T) {
	t.Parallel()
	tpls, err := readTemplates("../../testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	e := newServeEnv(t, serveOptions{})
	e.start()
	found := false
	for _, tpl := range tpls {
		if tpl.Name != "busybox" {
			continue
		}
		found = true
		tpl.Image = e.image // the same image, should the test run name another
		e.must(e.call("PUT", "/api/templates/busybox", adminToken, tpl), http.StatusCreated)
	}
	if !found {
		t.Fatal("testdata/templates has no busybox template")
	}
	in := e.instance(e.must(e.call("POST", "/api/containers", aliceToken,
		map[string]any{"template": "busybox", "name": "hello", "env": map[string]string{"GREETING": "berth"}}), http.StatusAccepted))
	e.waitFor(in.ID, fsm.Running, time.Minute)
	e.must(e.call("POST", "/api/containers/"+in.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	stopped := e.waitFor(in.ID, fsm.Stopped, time.Minute)
	if stopped.ExitCode == nil || *stopped.ExitCode != 0 {
		code := "none"
		if stopped.ExitCode != nil {
			code = strconv.Itoa(*stopped.ExitCode)
		}
		t.Fatalf("stopped with exit code %s (%s), want 0: the sample's PID 1 must end on SIGTERM", code, stopped.StatusReason)
	}
}
