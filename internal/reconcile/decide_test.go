package reconcile

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// The sync table of the package documentation, row by row.
func TestDecide(t *testing.T) {
	const grace = time.Minute
	young, old := time.Second, 2*time.Minute
	state := func(p runtime.Phase) *runtime.State { return &runtime.State{Phase: p} }
	run, exit, dead, created := state(runtime.PhaseRunning), state(runtime.PhaseExited), state(runtime.PhaseDead), state(runtime.PhaseCreated)
	for _, c := range []struct {
		status   fsm.Status
		node     string
		st       *runtime.State
		complete bool
		age      time.Duration
		want     verdict
	}{
		{fsm.Creating, "", run, true, young, observeStarted},
		{fsm.Creating, "", exit, true, young, noChange}, // the create worker reports it
		{fsm.Creating, "", exit, true, old, observeStartedFirst},
		{fsm.Creating, "", nil, true, old, noChange}, // maybe still pulling: the stuck policy's
		{fsm.Creating, "", created, true, old, noChange},
		{fsm.Running, "n", run, true, old, noChange},
		{fsm.Running, "", run, true, old, observeBackfill},
		{fsm.Running, "n", exit, false, young, observeExited},
		{fsm.Running, "n", dead, true, young, observeExited},
		{fsm.Running, "n", nil, true, young, noChange},
		{fsm.Running, "n", nil, true, old, observeDestroyed},
		{fsm.Running, "n", nil, false, old, absentUnverified},
		{fsm.Running, "n", created, true, old, noChange},
		{fsm.Paused, "n", run, true, old, observeResumed},
		{fsm.Running, "n", state(runtime.PhasePaused), true, old, observePaused},
		{fsm.Running, "", state(runtime.PhasePaused), true, young, observePaused},
		{fsm.Paused, "n", exit, true, young, observeExited},
		{fsm.Stopping, "n", state(runtime.PhasePaused), true, old, noChange},
		{fsm.StopPending, "n", state(runtime.PhasePaused), true, old, noChange},
		{fsm.Starting, "n", state(runtime.PhasePaused), true, old, noChange},
		{fsm.DeletePending, "n", state(runtime.PhasePaused), true, old, noChange},
		{fsm.Paused, "n", state(runtime.PhasePaused), true, old, noChange},
		{fsm.Paused, "n", nil, true, old, observeDestroyed},
		{fsm.Starting, "n", run, true, young, observeStarted},
		{fsm.Starting, "n", exit, true, old, noChange},
		{fsm.Starting, "n", nil, true, old, noChange}, // the start worker recreates it
		{fsm.Stopping, "n", run, true, old, noChange},
		{fsm.Stopping, "n", exit, true, young, observeExited},
		{fsm.Stopping, "n", nil, true, old, observeDestroyed},
		{fsm.StopPending, "n", exit, true, old, noChange},
		{fsm.StopPending, "n", nil, true, old, noChange},
		{fsm.StartPending, "n", exit, true, old, noChange},
		{fsm.StartPending, "n", run, true, old, noChange},
		{fsm.Pending, "", nil, true, old, noChange},
		{fsm.DeletePending, "n", nil, true, old, noChange},
		{fsm.Deleting, "n", exit, true, old, noChange},
	} {
		inst := container.Instance{ID: "i", Status: c.status, RuntimeNodeName: c.node}
		phase := runtime.Phase("absent")
		if c.st != nil {
			phase = c.st.Phase
		}
		if got := decide(inst, c.st, c.complete, c.age, grace); got != c.want {
			t.Errorf("%s (node %q), container %s, complete %v, age %s: %d, want %d", c.status, c.node, phase, c.complete, c.age, got, c.want)
		}
	}
}

func TestTimeoutsFor(t *testing.T) {
	to := TimeoutsFor(configContainer(50, 3, 5*time.Minute, 10*time.Second))
	if got := to[fsm.Pending]; got != 17*5*time.Minute+StuckMargin {
		t.Errorf("pending: %s", got)
	}
	if got := to[fsm.Creating]; got != 10*time.Minute {
		t.Errorf("creating: %s", got)
	}
	if got := to[fsm.Stopping]; got != 10*time.Minute {
		t.Errorf("stopping: %s", got)
	}
	for _, s := range []fsm.Status{fsm.Running, fsm.Paused, fsm.Stopped, fsm.Failed} {
		if _, ok := to[s]; ok {
			t.Errorf("%s has a stuck timeout", s)
		}
	}
}

func configContainer(maxPending, conc int, createTO, grace time.Duration) config.Container {
	return config.Container{CreateQueueMaxPending: maxPending, CreateQueueMaxConcurrency: conc, CreateStartTimeout: createTO, StopGracePeriod: grace}
}
