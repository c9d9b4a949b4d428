package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/runtime"
)

// TestServeLogs reads a container's output through berth serve's API and
// CLI, on a real Docker engine: plain text and NDJSON, tail, stream,
// timestamps, the answer's bound and its continuation, owners only, and a
// follow that ends when the container does.
func TestServeLogs(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{})
	e.start()
	const lines = httpapi.DefaultLogsMaxLines + 50
	for name, script := range map[string]string{
		// err1 first (stderr), then l1…l10050 on stdout, then a failure.
		"chatty": fmt.Sprintf(`echo err1 >&2; sleep 0.2; seq 1 %d | sed s/^/l/; exit 4`, lines),
		"ticker": "echo one; sleep 1; echo two; sleep 1",
	} {
		e.must(e.call("PUT", "/api/templates/"+name, adminToken, container.Template{Runtime: "docker", Image: e.image,
			PullPolicy: container.PullNever, Command: []string{"sh", "-c", script}}), http.StatusCreated)
	}
	chatty := e.create("chatty")
	e.waitFor(chatty.ID, fsm.Failed, time.Minute)
	p := "/api/containers/" + chatty.ID + "/logs"

	// The first answer is cut at 10,000 lines and says where the rest starts.
	first := e.must(e.call("GET", p, aliceToken, nil), http.StatusOK)
	got := strings.Split(strings.TrimSuffix(string(first.body), "\n"), "\n")
	if len(got) != httpapi.DefaultLogsMaxLines || got[0] != "err1" || got[1] != "l1" || got[len(got)-1] != "l9999" {
		t.Fatalf("first answer: %d lines, %q … %q", len(got), got[0], got[len(got)-1])
	}
	if ct := first.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	next := first.header.Get(httpapi.NextSinceHeader)
	if _, err := time.Parse(time.RFC3339Nano, next); err != nil {
		t.Fatalf("a cut answer's %s = %q: %v", httpapi.NextSinceHeader, next, err)
	}
	rest := e.must(e.call("GET", p+"?since="+next, aliceToken, nil), http.StatusOK)
	got = strings.Split(strings.TrimSuffix(string(rest.body), "\n"), "\n")
	if len(got) != 51 || got[0] != "l10000" || got[50] != "l10050" || rest.header.Get(httpapi.NextSinceHeader) != "" {
		t.Errorf("the rest: %d lines, %q … %q, next %q", len(got), got[0], got[len(got)-1], rest.header.Get(httpapi.NextSinceHeader))
	}

	for _, c := range []struct {
		query, want string
	}{
		{"?tail=3", "l10048\nl10049\nl10050\n"},
		{"?stream=stderr", "err1\n"},
		{"?stream=stdout&tail=1", "l10050\n"},
	} {
		if r := e.must(e.call("GET", p+c.query, aliceToken, nil), http.StatusOK); string(r.body) != c.want {
			t.Errorf("%s: %q, want %q", c.query, r.body, c.want)
		}
	}
	ts := e.must(e.call("GET", p+"?tail=1&timestamps=true", adminToken, nil), http.StatusOK)
	stamp, text, _ := strings.Cut(strings.TrimSuffix(string(ts.body), "\n"), " ")
	if at, err := time.Parse(time.RFC3339Nano, stamp); err != nil || text != "l10050" || time.Since(at) > 5*time.Minute {
		t.Errorf("timestamps: %q (%v)", ts.body, err)
	}

	// NDJSON, by Accept or by format=.
	for _, how := range []string{"accept", "format"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.addr+p+"?tail=2&stream=both", nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		if how == "accept" {
			req.Header.Set("Accept", "application/x-ndjson")
		} else {
			req.URL.RawQuery += "&format=ndjson"
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(resp.Body)
		var items []struct {
			Stream, Line string
			Time         time.Time
		}
		for dec.More() {
			var it struct {
				Stream, Line string
				Time         time.Time
			}
			if err := dec.Decode(&it); err != nil {
				t.Fatal(err)
			}
			items = append(items, it)
		}
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != "application/x-ndjson" || len(items) != 2 ||
			items[1].Line != "l10050" || items[1].Stream != "stdout" || items[1].Time.IsZero() {
			t.Errorf("ndjson by %s: %s %+v", how, resp.Header.Get("Content-Type"), items)
		}
	}

	// Only the owner and admins; the rest is refused as the API refuses elsewhere.
	e.must(e.call("GET", p, bobToken, nil), http.StatusNotFound)
	e.must(e.call("GET", "/api/containers/nosuch/logs", aliceToken, nil), http.StatusNotFound)
	for _, q := range []string{"tail=0", "tail=10001", "tail=x", "stream=stdin", "since=yesterday", "follow=maybe", "format=xml"} {
		e.must(e.call("GET", p+"?"+q, aliceToken, nil), http.StatusBadRequest)
	}

	// The CLI prints every line, following the cut answer to its end.
	env := map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": aliceToken}
	r := runBerth(t, env, "", "containers", "logs", chatty.ID)
	if r.code != 0 || strings.Count(r.stdout, "\n") != lines+1 || !strings.HasSuffix(r.stdout, "l10049\nl10050\n") {
		t.Errorf("berth containers logs: exit %d, %d lines; stderr %s", r.code, strings.Count(r.stdout, "\n"), r.stderr)
	}
	runBerth(t, env, "", "containers", "logs", chatty.ID, "--tail", "2").check(t, 0, []string{"l10049\nl10050\n"}, nil)
	if r := runBerth(t, env, "", "containers", "logs", chatty.ID, "--since", "1h", "--tail", "1"); r.stdout != "l10050\n" {
		t.Errorf("--since 1h --tail 1: %q %s", r.stdout, r.stderr)
	}
	runBerth(t, map[string]string{"BERTH_URL": "http://" + e.addr, "BERTH_TOKEN": bobToken}, "",
		"containers", "logs", chatty.ID).check(t, 1, nil, []string{"404"})

	// A follow streams until the container ends, through the API and -f.
	ticker := e.create("ticker")
	e.waitFor(ticker.ID, fsm.Running, time.Minute)
	start := time.Now()
	f := e.must(e.call("GET", "/api/containers/"+ticker.ID+"/logs?follow=true", aliceToken, nil), http.StatusOK)
	if string(f.body) != "one\ntwo\n" {
		t.Errorf("follow: %q", f.body)
	}
	// The follow ended with the container (the state loop may record that
	// a moment later, but the engine says it is over).
	ended := e.instance(e.must(e.call("GET", "/api/containers/"+ticker.ID, aliceToken, nil), 200))
	if st, err := e.engine.Inspect(t.Context(), runtime.RefOf(ended)); err != nil || st.Phase.Active() {
		t.Errorf("the follow ended after %v while the container is %s (%v)", time.Since(start), st.Phase, err)
	}
	ticker2 := e.create("ticker")
	e.waitFor(ticker2.ID, fsm.Running, time.Minute)
	runBerth(t, env, "", "containers", "logs", ticker2.ID, "-f").check(t, 0, []string{"one\ntwo\n"}, nil)
	e.stop()
}
