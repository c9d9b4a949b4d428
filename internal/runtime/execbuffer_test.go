package runtime_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/berth-io/berth/internal/runtime"
)

// TestBoundedBufferKeepsItsBound: 1 MiB written in the pieces a stream
// brings keeps the first Limit bytes, never more than Limit of memory, and
// counts the rest as dropped; a small output costs little.
func TestBoundedBufferKeepsItsBound(t *testing.T) {
	const limit = 64 << 10
	src := bytes.Repeat([]byte("0123456789abcdef"), (1<<20)/16)
	b := &runtime.BoundedBuffer{Limit: limit}
	n, err := io.CopyBuffer(b, bytes.NewReader(src), make([]byte, 3000))
	if err != nil || n != int64(len(src)) {
		t.Fatalf("copy: %d, %v; want the whole MiB read", n, err)
	}
	if got := b.Bytes(); !bytes.Equal(got, src[:limit]) || cap(got) > limit {
		t.Errorf("kept %d bytes (cap %d), want the first %d, cap ≤ the limit", len(got), cap(got), limit)
	}
	if !b.Truncated() || b.Dropped != int64(len(src)-limit) {
		t.Errorf("dropped %d, truncated %v; want %d", b.Dropped, b.Truncated(), len(src)-limit)
	}

	small := &runtime.BoundedBuffer{Limit: limit}
	_, _ = small.Write([]byte("ok\n"))
	if string(small.Bytes()) != "ok\n" || small.Truncated() || cap(small.Bytes()) > 4096 {
		t.Errorf("a small output: %q (cap %d), truncated %v", small.Bytes(), cap(small.Bytes()), small.Truncated())
	}

	// Allocations for the whole MiB: the buffer's growth only, not one per
	// write.
	allocs := testing.AllocsPerRun(5, func() {
		b := &runtime.BoundedBuffer{Limit: limit}
		for p := src; len(p) > 0; p = p[min(len(p), 32<<10):] {
			_, _ = b.Write(p[:min(len(p), 32<<10)])
		}
	})
	if allocs > 8 {
		t.Errorf("%v allocations for 1 MiB through a 64 KiB bound, want the growth's few", allocs)
	}
}

// TestExecKillScript: the kill script is one sh -c that names the marker
// and refuses a marker that could break out of it.
func TestExecKillScript(t *testing.T) {
	cmd := runtime.ExecKillScript("01ABCDEF")
	if len(cmd) != 3 || cmd[0] != "/bin/sh" || cmd[1] != "-c" || !bytes.Contains([]byte(cmd[2]), []byte(runtime.ExecMarkerEnv+"=01ABCDEF")) {
		t.Errorf("kill script %q", cmd)
	}
	defer func() {
		if recover() == nil {
			t.Error("a marker with a quote was accepted")
		}
	}()
	runtime.ExecKillScript("x'; rm -rf /")
}
