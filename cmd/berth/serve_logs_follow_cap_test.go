package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
)

// openFiles counts the descriptors process pid holds (/proc/<pid>/fd).
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestServeLogsFollowCapped: through berth serve on a real Docker engine,
// one caller's logs follows are capped (server.max_follows_per_caller):
// beyond it a follow answers 429 with Retry-After in problem+json, while
// another caller's follow is still served; berth's open files grow by the
// follows it serves, not by the 100 it refused; a follow that ends frees
// its place.
func TestServeLogsFollowCapped(t *testing.T) {
	t.Parallel()
	const perCaller, flood = 4, 100
	e := newServeEnv(t, serveOptions{extra: fmt.Sprintf("server:\n  max_follows_per_caller: %d\n", perCaller)})
	e.start()
	e.must(e.call("PUT", "/api/templates/ticker", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "while true; do echo tick; sleep 1; done"}}), http.StatusCreated)
	mine := e.create("ticker")
	theirs := e.instance(e.must(e.call("POST", "/api/containers", bobToken, map[string]string{"template": "ticker"}), http.StatusAccepted))
	e.waitFor(mine.ID, fsm.Running, time.Minute)
	e.must(e.call("GET", "/api/containers/"+theirs.ID+"/wait?status=running&timeout=25s", bobToken, nil), http.StatusOK)
	pid := e.proc.Process.Pid
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	follow := func(id, token string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.addr+"/api/containers/"+id+"/logs?follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	before := openFiles(t, pid)

	var held []*http.Response
	for range perCaller {
		r := follow(mine.ID, aliceToken)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("alice's follow within her %d: %d", perCaller, r.StatusCode)
		}
		held = append(held, r)
	}
	var wg sync.WaitGroup
	codes := make(chan *http.Response, flood)
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- follow(mine.ID, aliceToken)
		}()
	}
	wg.Wait()
	close(codes)
	refused := 0
	for r := range codes {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		var p httpapi.Problem
		if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") || json.Unmarshal(body, &p) != nil ||
			!strings.Contains(p.Detail, "your") || p.RetryAfterSeconds < 1 {
			t.Errorf("alice's follow beyond her %d: %d %v %s", perCaller, r.StatusCode, r.Header, body)
			continue
		}
		refused++
	}
	// bob's follow is served while alice is at her cap.
	bobs := follow(theirs.ID, bobToken)
	if bobs.StatusCode != http.StatusOK {
		t.Fatalf("bob's follow while alice is at her cap: %d", bobs.StatusCode)
	}
	held = append(held, bobs)
	during := openFiles(t, pid)
	t.Logf("berth serve's open files: %d before, %d with %d follows served and %d refused", before, during, len(held), refused)
	// A follow holds its connection and the engine's log stream; the
	// refused ones hold nothing once answered.
	if grown := during - before; grown > 3*len(held)+4 {
		t.Errorf("open files grew by %d for %d follows served (%d refused)", grown, len(held), refused)
	}
	for _, r := range held {
		r.Body.Close()
	}
	// Her places are freed as her follows end: one is served again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := follow(mine.ID, aliceToken)
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			break
		}
		if r.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("alice's follow after hers ended: %d", r.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
