package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// engineCounter is an HTTP relay in front of the real Docker engine's unix
// socket that counts the Engine API requests passing through it, by method
// and route (version prefix and object ids left out). Every answer is the
// engine's; the count is what a benchmark reports to say where a client's
// calls go.
type engineCounter struct {
	path string

	mu     sync.Mutex
	counts map[string]int
}

// newEngineCounter relays to upstream (unix:///path) from a new socket until
// the test ends.
func newEngineCounter(tb testing.TB, upstream string) *engineCounter {
	tb.Helper()
	sock, ok := strings.CutPrefix(upstream, "unix://")
	if !ok {
		tb.Skipf("the engine counter relays unix sockets only; the engine is at %s", upstream)
	}
	// A short directory: a unix socket's path is limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "berth-count-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &engineCounter{path: filepath.Join(dir, "docker.sock"), counts: map[string]int{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, "unix", sock)
		}},
		FlushInterval: -1, // the event stream goes through as it comes
	}
	ln, err := net.Listen("unix", c.path)
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[r.Method+" "+engineRoute(r.URL.Path)]++
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() {
		_ = srv.Close()
		os.RemoveAll(dir)
	})
	return c
}

// endpoint is the counter's address, for berth's config or a client.
func (c *engineCounter) endpoint() string { return "unix://" + c.path }

// take returns the counts so far and starts again from zero.
func (c *engineCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// engineRoute is path without its /v1.xx prefix and with the object id of
// /containers/{id}/… and /images/{name}/… replaced by {id}.
func engineRoute(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) > 0 && strings.HasPrefix(parts[0], "v1.") {
		parts = parts[1:]
	}
	if len(parts) >= 3 && (parts[0] == "containers" || parts[0] == "images") && parts[1] != "create" && parts[1] != "json" {
		parts = append([]string{parts[0], "{id}"}, parts[len(parts)-1])
	} else if len(parts) == 2 && parts[0] == "containers" && parts[1] != "create" && parts[1] != "json" {
		parts[1] = "{id}"
	}
	return "/" + strings.Join(parts, "/")
}

// total sums counts.
func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}
