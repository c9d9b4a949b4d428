package emulate_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// engineCut is a connection-level proxy in front of the test Docker
// engine that the stack is pointed at: while cut, the engine cannot be
// reached (new connections are closed at once, open ones are broken), as
// when the network to a Docker host goes down. The test itself sees the
// engine directly (stack.rt).
type engineCut struct {
	endpoint string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newEngineCut(t *testing.T) *engineCut {
	t.Helper()
	target := strings.TrimPrefix(testenv.DockerHost(t), "unix://")
	dir, err := os.MkdirTemp("", "bc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := &engineCut{endpoint: "unix://" + sock, conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go e.serve(c, target)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		e.setCut(true) // breaks what is still open
	})
	return e
}

// serve relays one connection to the engine unless the engine is cut off.
func (e *engineCut) serve(c net.Conn, target string) {
	up, err := net.Dial("unix", target)
	if err != nil {
		_ = c.Close()
		return
	}
	e.mu.Lock()
	if e.cut {
		e.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	e.conns[c], e.conns[up] = true, true
	e.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	e.mu.Lock()
	delete(e.conns, c)
	delete(e.conns, up)
	e.mu.Unlock()
}

// setCut cuts the engine off (breaking every open connection) or restores it.
func (e *engineCut) setCut(cut bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cut = cut
	if cut {
		for c := range e.conns {
			_ = c.Close()
		}
	}
}
