package emulate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/berth-io/berth/internal/emulate"
)

// killFunction SIGKILLs one live execution environment (the RIE and the
// bootstrap it runs) of a function picked by weight, as Lambda ends an
// invocation at its timeout or on an out-of-memory; the emulator starts a
// new one on the next invocation (a cold start in the middle of the
// burst).
func (r *emuChaos) killFunction(rng *rand.Rand) {
	total := 0
	for _, k := range killable {
		total += k.weight
	}
	x, first := rng.IntN(total), 0
	for i, k := range killable {
		if x < k.weight {
			first = i
			break
		}
		x -= k.weight
	}
	// The notify function first: every run kills it once (the deliveries
	// it holds must come back), whatever the weights draw.
	r.mu.Lock()
	notified := r.kills["NotifyFunction"] > 0
	r.mu.Unlock()
	if !notified {
		first = slices.IndexFunc(killable, func(k struct {
			fn     string
			weight int
		}) bool {
			return k.fn == "NotifyFunction"
		})
	}
	// The function picked, or the next one that has a live environment
	// (one just killed may not have been invoked again yet).
	var fn string
	var alive []int
	for i := range killable {
		fn = killable[(first+i)%len(killable)].fn
		for _, pid := range r.st.functionPIDs(fn) {
			if liveRIE(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) > 0 {
			break
		}
	}
	if len(alive) == 0 {
		r.t.Logf("kill skipped: no function has a live execution environment")
		return
	}
	pid := alive[rng.IntN(len(alive))]
	tree := emulate.Descendants(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the RIE's process group
	for _, c := range tree {
		_ = syscall.Kill(c, syscall.SIGKILL) // the bootstrap, in a group of its own
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kills[fn]++
	r.killedEnvs++
}

// liveRIE reports whether pid is a running RIE of this test's emulator (a
// PID the emulator reaped may be reused by anything else).
func liveRIE(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte("--runtime-interface-emulator-address"))
}

// invocationResults counts, by function and result, the invocations the
// emulator logged. A crash is an invocation a kill ended (a killed idle
// environment is not invoked again); the dispatcher's failed invocations
// are stream batches retried.
func invocationResults(logs string) map[string]map[emulate.Result]int {
	out := map[string]map[emulate.Result]int{}
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, `"msg":"invoke"`) {
			continue
		}
		var rec struct{ Function, Result string }
		if json.Unmarshal([]byte(l), &rec) != nil || rec.Function == "" {
			continue
		}
		if out[rec.Function] == nil {
			out[rec.Function] = map[emulate.Result]int{}
		}
		out[rec.Function][emulate.Result(rec.Result)]++
	}
	return out
}
