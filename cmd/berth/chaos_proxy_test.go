package main

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// engineProxy is a unix-socket relay between berth and the real Docker
// engine that the test can cut: while cut, connecting is refused (the
// socket file stays, nobody listens, as when dockerd is down) and every
// relayed connection has been closed, event streams included. It injects
// the fault around the real engine; every byte that passes is the engine's.
type engineProxy struct {
	t        testing.TB
	path     string // the socket berth connects to
	upstream string // the engine's unix socket path

	mu    sync.Mutex
	ln    *net.UnixListener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newEngineProxy relays to upstream (unix:///path) from a new socket, and
// stops relaying when the test ends.
func newEngineProxy(t testing.TB, upstream string) *engineProxy {
	t.Helper()
	path, ok := strings.CutPrefix(upstream, "unix://")
	if !ok {
		t.Skipf("the engine proxy relays unix sockets only; the engine is at %s", upstream)
	}
	// A short directory: a unix socket's path is limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "berth-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	p := &engineProxy{t: t, path: filepath.Join(dir, "docker.sock"), upstream: path, conns: map[net.Conn]struct{}{}}
	p.restore()
	t.Cleanup(func() {
		p.cut()
		os.RemoveAll(dir)
	})
	return p
}

// endpoint is the proxy's address for berth's config.
func (p *engineProxy) endpoint() string { return "unix://" + p.path }

// restore starts accepting again after a cut.
func (p *engineProxy) restore() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	_ = os.Remove(p.path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.path, Net: "unix"})
	if err != nil {
		p.t.Fatalf("engine proxy: %v", err)
	}
	ln.SetUnlinkOnClose(false)
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
}

// cut refuses new connections and closes every relayed one; it returns
// once no relay goroutine is left.
func (p *engineProxy) cut() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *engineProxy) accept(ln *net.UnixListener) {
	defer p.wg.Done()
	for {
		down, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.t.Logf("engine proxy: accept: %v", err)
			}
			return
		}
		up, err := net.Dial("unix", p.upstream)
		if err != nil {
			p.t.Logf("engine proxy: dialing the engine: %v", err)
			down.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // cut between Accept and here
			p.mu.Unlock()
			down.Close()
			up.Close()
			continue
		}
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.relay(down, up)
		go p.relay(up, down)
	}
}

// relay copies one direction; when either side ends, both are closed so
// that the peer sees the break at once.
func (p *engineProxy) relay(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
