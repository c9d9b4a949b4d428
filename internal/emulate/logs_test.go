package emulate_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLogsThroughFrontDoor reads what a container printed through the
// emulated stack's front door, as on AWS: the route goes to the
// LogsFunction (the api function holds no runtime client), a follow is
// answered at once with Berth-Follow: poll and a Berth-Next-Since cursor,
// and polling with since=<cursor> brings the lines printed after it, each
// once. Another owner gets 404.
func TestLogsThroughFrontDoor(t *testing.T) {
	t.Parallel()
	st := start(t, setup{})
	st.putTemplate("chatty", []string{"sh", "-c", "echo err1 >&2; sleep 1; seq 1 3 | sed s/^/l/; sleep 3600"})
	id := st.create(aliceToken, "chatty", "chatty")
	st.wait(aliceToken, id, "running", time.Minute)
	p := "/api/containers/" + id + "/logs"

	// Follow by polling, as a client behind API Gateway does, until the
	// container has printed its four lines.
	var got strings.Builder
	since := ""
	deadline := time.Now().Add(time.Minute)
	for got.String() != "err1\nl1\nl2\nl3\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute of polling: %q", got.String())
		}
		q := "?follow=true"
		if since != "" {
			q += "&since=" + since
		}
		r := st.do(http.MethodGet, p+q, aliceToken, nil)
		if r.status != http.StatusOK || r.header.Get("Berth-Follow") != "poll" {
			t.Fatalf("follow: %d %v %s", r.status, r.header, r.body)
		}
		next := r.header.Get("Berth-Next-Since")
		if _, err := time.Parse(time.RFC3339Nano, next); err != nil {
			t.Fatalf("Berth-Next-Since %q: %v", next, err)
		}
		got.Write(r.body)
		since = next
		if len(r.body) == 0 {
			time.Sleep(200 * time.Millisecond) // the poll interval of a client
		}
	}
	if r := st.do(http.MethodGet, p+"?tail=1&stream=stdout", aliceToken, nil); r.status != http.StatusOK || string(r.body) != "l3\n" {
		t.Errorf("tail=1: %d %q", r.status, r.body)
	}
	if r := st.do(http.MethodGet, p, bobToken, nil); r.status != http.StatusNotFound {
		t.Errorf("another owner: %d %s", r.status, r.body)
	}
	if longestInvocation(st.logs.String(), "LogsFunction") == 0 {
		t.Errorf("the LogsFunction never ran")
	}
}
