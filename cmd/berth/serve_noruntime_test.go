package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
)

// TestServeWithoutRuntime: `berth serve` with no Docker host and no
// Kubernetes cluster starts (it used to stop at "docker runtime: no hosts
// configured"), says so at start-up, is not ready with the reason, refuses
// a template PUT with a 422 and every create at once with a 503 naming the
// missing keys, and holds no admission slot for them.
func TestServeWithoutRuntime(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = t.TempDir()
	cfg.Store.BoltPath = filepath.Join(cfg.Server.DataDir, "berth.db")
	cfg.Container.CreateQueueMaxPending = 1
	var out bytes.Buffer
	srv, err := newServer(ctx, cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)), &out)
	if err != nil {
		t.Fatalf("berth serve without a runtime does not start: %v", err)
	}
	if !strings.Contains(out.String(), "runtime:  none") {
		t.Errorf("start-up summary does not say there is no runtime:\n%s", out.String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.run(ctx) }()
	base := "http://" + srv.listener.Addr().String()
	hc := &http.Client{Transport: apicontract.Transport(t, nil)}
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %v", method, path, resp.StatusCode, want, doc)
		}
		return doc
	}
	if d := call("GET", "/readyz", "", http.StatusServiceUnavailable); !strings.Contains(d["detail"].(string), "no runtime configured") {
		t.Errorf("/readyz: %v", d)
	}
	if d := call("GET", "/healthz", "", http.StatusOK); d["status"] != "not ready" || d["runtimes"] == nil {
		t.Errorf("/healthz: %v", d)
	}
	call("PUT", "/api/templates/sleeper", `{"runtime":"docker","image":"busybox:1"}`, http.StatusUnprocessableEntity)
	for range 3 { // beyond create_queue_max_pending: each refused the same way
		if d := call("POST", "/api/containers", `{"template":"sleeper"}`, http.StatusServiceUnavailable); !strings.Contains(d["detail"].(string), "docker.hosts") {
			t.Errorf("create: %v", d)
		}
	}
	if n, err := srv.store.AdmissionCount(ctx); err != nil || n != 0 {
		t.Errorf("admission slots held: %d, %v", n, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
