package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// slowServer serves the real API handler (on an embedded store) through
// newHTTPServer with short timeouts, counting connections as the server
// sees them.
type slowServer struct {
	addr   string
	opened chan struct{}
	closed chan struct{}
}

func newSlowServer(t *testing.T, c config.Server) *slowServer {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "berth.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := httpapi.New(httpapi.Options{Manager: manager.New(manager.Options{Store: st, Logger: log}),
		Auth: httpapi.SingleUser("local"), Logger: log})
	srv := newHTTPServer(c, h, log)
	s := &slowServer{opened: make(chan struct{}, 1024), closed: make(chan struct{}, 1024)}
	srv.ConnState = func(_ net.Conn, cs http.ConnState) {
		switch cs {
		case http.StateNew:
			s.opened <- struct{}{}
		case http.StateClosed, http.StateHijacked:
			s.closed <- struct{}{}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *slowServer) await(t *testing.T, ch chan struct{}, n int, what string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for i := range n {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("%d of %d connections %s", i, n, what)
		}
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count descriptors: %v", err)
	}
	return len(ents)
}

func testServerConfig() config.Server {
	c := config.Default().Server
	c.ReadHeaderTimeout, c.ReadTimeout, c.IdleTimeout = 300*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	c.MaxHeaderBytes = 4 << 10
	return c
}

// TestSlowClientsReleased: connections that declare a body and send none,
// or send half their headers, are closed by the server, and their file
// descriptors with them.
func TestSlowClientsReleased(t *testing.T) {
	const n = 100
	s := newSlowServer(t, testServerConfig())
	before := openFDs(t)
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		req := "POST /api/containers HTTP/1.1\r\nHost: berth\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
		if i%2 == 1 {
			req = "GET /api/containers HTTP/1.1\r\nHost: berth\r\n" // headers never finished
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}
	s.await(t, s.opened, n, "were accepted")
	during := openFDs(t)
	if during < before+n {
		t.Fatalf("descriptors %d → %d with %d connections held: the count does not see them", before, during, n)
	}
	// Each read ends when the server gives up on the connection.
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("connection %d was not closed by the server: %v", i, err)
		}
		c.Close()
	}
	s.await(t, s.closed, n, "were closed")
	after := openFDs(t)
	t.Logf("open descriptors: %d before, %d with %d slow clients, %d after", before, during, n, after)
	if after > before+2 {
		t.Fatalf("descriptors %d before, %d after the slow clients were cut off", before, after)
	}
}

// TestHeaderLimit: headers beyond server.max_header_bytes are refused.
func TestHeaderLimit(t *testing.T) {
	s := newSlowServer(t, testServerConfig())
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET /livez HTTP/1.1\r\nHost: berth\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("16 KiB of headers: %d, want 431", resp.StatusCode)
	}
}
