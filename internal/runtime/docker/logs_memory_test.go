package docker_test

import (
	goruntime "runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestLogsBoundedMemory reads the logs of a container that printed 10 MiB
// (in 100-byte lines, and in one line of 10 MiB) and samples the live heap
// while it does: the read streams, so the heap must not grow with the
// output. The collector runs often (GC percent 10) so that the samples
// measure what is held, not garbage waiting for a cycle.
func TestLogsBoundedMemory(t *testing.T) {
	const total = 10 << 20
	// What the read may hold beyond the heap before it: frames, one line,
	// the HTTP client's buffers; far under the 10 MiB printed.
	const bound = 2 << 20
	for _, c := range []struct{ name, script string }{
		{"ShortLines", "head -c 10485760 /dev/zero | tr '\\000' x | fold -w 99"},
		{"OneLongLine", "head -c 10485760 /dev/zero | tr '\\000' x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t)
			ctx := testenv.Context(t, 120*time.Second)
			events, err := e.Watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			inst := e.instance(c.script)
			ref := e.createStart(t, inst)
			for ev := range events {
				if ev.InstanceID == inst.ID && ev.Kind == runtime.EventExited {
					break
				}
			}
			defer debug.SetGCPercent(debug.SetGCPercent(10))
			var ms goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&ms)
			base, allocs0, bytes0 := ms.HeapAlloc, ms.Mallocs, ms.TotalAlloc
			var peak uint64
			var read, lines int
			sample := func() {
				goruntime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			err = e.Logs(ctx, ref, runtime.LogOptions{}, func(l runtime.LogLine) error {
				read += len(l.Text) // every byte but fold's newlines is an x
				lines++
				if lines%500 == 0 {
					sample()
				}
				return nil
			})
			if err != nil {
				t.Fatalf("logs: %v", err)
			}
			sample()
			if read != total {
				t.Errorf("read %d bytes of text, want %d", read, total)
			}
			grew := int64(peak) - int64(base)
			t.Logf("%s: %d bytes in %d lines; live heap before %d KiB, peak +%d KiB; %d allocations, %d KiB allocated in all",
				c.name, read, lines, base>>10, grew>>10, ms.Mallocs-allocs0, (ms.TotalAlloc-bytes0)>>10)
			if grew > bound {
				t.Errorf("the heap grew by %d KiB while reading 10 MiB of logs, over the %d KiB bound", grew>>10, bound>>10)
			}
		})
	}
}
