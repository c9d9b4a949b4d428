package chaosload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
)

// Tamper kills or removes (docker kill / docker rm -f, straight on the
// real engine, as berth's runtime sees it) one running container of the
// run, and records it (Tampered). It reports what it did, or why it did
// nothing: no container ran, or each one picked ended or went in the
// meantime (berth's own doing).
func (r *Run) Tamper(ctx context.Context, engine *docker.Runtime, rng *rand.Rand) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var running []runtime.State
	// A container to hit may take a moment to exist (creates queue behind
	// faults); without one by then, the fault is skipped.
	for deadline := time.Now().Add(10 * time.Second); len(running) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		states, err := engine.List(ctx)
		if err != nil {
			return "tampering skipped: listing: " + err.Error()
		}
		for _, s := range states {
			if s.Phase == runtime.PhaseRunning && s.InstanceID != "" {
				running = append(running, s)
			}
		}
	}
	if len(running) == 0 {
		return "tampering skipped: no running container"
	}
	sort.Slice(running, func(i, j int) bool { return running[i].InstanceID < running[j].InstanceID })
	var why string
	for range 3 { // one that ended or went in the meantime: another
		s := running[rng.IntN(len(running))]
		cli := engine.Client(s.Node)
		if cli == nil {
			return fmt.Sprintf("tampering skipped: no engine client for node %q", s.Node)
		}
		how, err := "removed", error(nil)
		if rng.IntN(2) == 0 {
			_, err = cli.ContainerRemove(ctx, s.RuntimeID, client.ContainerRemoveOptions{Force: true})
		} else {
			how = "killed"
			_, err = cli.ContainerKill(ctx, s.RuntimeID, client.ContainerKillOptions{Signal: "KILL"})
		}
		if err == nil {
			r.Tampered(s.InstanceID, how)
			return how + " " + s.InstanceID
		}
		why = fmt.Sprintf("tampering with %s: %v", s.InstanceID, err)
	}
	return why
}

// TamperedCounts returns how many containers the test killed and removed.
func (r *Run) TamperedCounts() (killed, removed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed, r.removed
}
