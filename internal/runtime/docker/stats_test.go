package docker_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestStatsMeasuresUsage: a container that keeps one core busy is read as
// the cores the kernel gave it over the same time (±20 %: on an idle
// machine, one core), against its limit of 2 cores; one that holds 64 MiB
// in memory shows at least that much in use, under its 256 MiB limit.
func TestStatsMeasuresUsage(t *testing.T) {
	t.Parallel()
	e := newEngine(t)

	t.Run("BusyCore", func(t *testing.T) {
		ctx := testenv.Context(t, 2*time.Minute)
		inst := e.instance("while :; do :; done")
		inst.Spec.Resources.CPU = "2"
		ref := e.createStart(t, inst)
		pid := hostPID(t, e, ref)
		before, t0 := cpuTicks(t, pid), time.Now()
		s, err := e.Stats(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel's account of the process over a window that holds the
		// engine's one-second sample (the call's own duration).
		kernel := float64(cpuTicks(t, pid)-before) / clockTicks / time.Since(t0).Seconds()
		t.Logf("stats: %.3f cores (%.1f %% of the limit); the kernel over the call: %.3f cores", s.CPU.Cores, deref(s.CPU.PercentOfLimit), kernel)
		if s.CPU.Cores < 0.8*kernel-0.05 || s.CPU.Cores > 1.2*kernel+0.05 {
			t.Errorf("cores %.3f, want the kernel's %.3f ±20 %%", s.CPU.Cores, kernel)
		}
		if p := s.CPU.PercentOfLimit; p == nil || *p < s.CPU.Cores/2*100-0.01 || *p > s.CPU.Cores/2*100+0.01 {
			t.Errorf("percent of a 2-core limit: %v, want %.1f", p, s.CPU.Cores/2*100)
		}
		if s.PIDs == nil || *s.PIDs < 1 {
			t.Errorf("pids: %v", s.PIDs)
		}
	})

	t.Run("HoldsMemory", func(t *testing.T) {
		// The shell grows its buffer as it reads: on a loaded machine the
		// 64 MiB take a while to be held.
		ctx := testenv.Context(t, 4*time.Minute)
		const held = 64 << 20
		// The loop keeps the shell, and x with it: a last simple command
		// (sleep) would be exec'd in its place and the memory freed.
		inst := e.instance(fmt.Sprintf("x=$(head -c %d /dev/zero | tr '\\000' a); echo held; while :; do sleep 3600; done", held))
		inst.Spec.Resources.Memory = "256Mi"
		ref := e.createStart(t, inst)
		var s runtime.Stats
		for {
			var err error
			if s, err = e.Stats(ctx, ref); err != nil {
				t.Fatal(err)
			}
			if s.Memory.UsageBytes >= held {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("memory in use %d bytes, want ≥ %d", s.Memory.UsageBytes, held)
			}
		}
		if l := s.Memory.LimitBytes; l == nil || *l != 256<<20 {
			t.Errorf("memory limit %v, want %d", l, 256<<20)
		}
		t.Logf("memory: %d bytes in use of %d", s.Memory.UsageBytes, *s.Memory.LimitBytes)
	})

	t.Run("NotRunning", func(t *testing.T) {
		ctx := testenv.Context(t, 2*time.Minute)
		ref := e.createStart(t, e.instance("exit 0"))
		for {
			st, err := e.Inspect(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Phase.Active() {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := e.Stats(ctx, ref); !runtime.IsConflict(err) {
			t.Errorf("stats of an ended container: %v, want a conflict", err)
		}
	})
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times
// (100 on every Linux berth runs on).
const clockTicks = 100

// hostPID is the host's PID of ref's main process: the engine shares this
// machine's kernel (testenv's engines run here).
func hostPID(t *testing.T, e *engine, ref runtime.Ref) int {
	t.Helper()
	res, err := e.Client(ref.Node).ContainerInspect(testenv.Context(t, 10*time.Second), ref.RuntimeID, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil || res.Container.State.Pid == 0 {
		t.Fatalf("inspect for the pid: %v", err)
	}
	return res.Container.State.Pid
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("the engine's containers must run on this machine's kernel: %v", err)
	}
	// Fields after the command's closing parenthesis: state is field 3;
	// utime and stime are fields 14 and 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return ut + st
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}
