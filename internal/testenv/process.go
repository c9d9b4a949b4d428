package testenv

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address (127.0.0.1:port) that was free a
// moment ago, for a server a test starts as a process of its own.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// SyncBuffer collects output written concurrently (a child process, a
// logger used by handlers and loops) while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// JSONLines returns the lines written so far that are JSON objects (a
// JSON logger's records), in order; other lines are skipped.
func (b *SyncBuffer) JSONLines() []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m != nil {
			out = append(out, m)
		}
	}
	return out
}
