package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
)

// listing is one runtime's containers of the reconciler's scope.
type listing struct {
	rt         runtime.Runtime
	byInstance map[string][]runtime.State
	unlabelled []runtime.State // berth-managed but without an instance id
	// complete: every node answered, so absence means absence.
	complete bool
	// down names the nodes that did not answer (when the error said).
	down map[string]bool
}

// unreachable reports whether the instance's runtime could not be reached
// in this pass: its node did not answer, or some node did not and the
// instance has none recorded (it may be on, or bound for, that one).
func (l *listing) unreachable(inst container.Instance) bool {
	if l.complete {
		return false
	}
	return inst.RuntimeNodeName == "" || len(l.down) == 0 || l.down[inst.RuntimeNodeName]
}

// downNodes collects the nodes named by the runtime errors in err's tree.
// It walks the tree itself because errors.As stops at the first match and
// every node is wanted.
//
//nolint:errorlint // see above
func downNodes(err error, into map[string]bool) {
	if re, ok := err.(*runtime.Error); ok && re.Node != "" {
		into[re.Node] = true
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			downNodes(inner, into)
		}
	case interface{ Unwrap() error }:
		downNodes(e.Unwrap(), into)
	}
}

// listRuntimes lists every runtime once.
func (r *Reconciler) listRuntimes(ctx context.Context, log *slog.Logger, rep *Report) map[string]*listing {
	out := make(map[string]*listing, len(r.kinds))
	for _, kind := range r.kinds {
		rt := r.rts[kind]
		states, err := rt.List(ctx)
		l := &listing{rt: rt, byInstance: make(map[string][]runtime.State), complete: err == nil, down: map[string]bool{}}
		if err != nil {
			downNodes(err, l.down)
			rep.ListPartial = true
			log.WarnContext(ctx, "runtime listing is partial; no absence is acted on", "op", "list", "runtime", kind,
				"error", err, "containers", len(states))
		}
		for _, s := range states {
			if s.Labels[runtime.LabelScope] != r.scope {
				continue
			}
			rep.Containers++
			if s.InstanceID == "" {
				l.unlabelled = append(l.unlabelled, s)
				continue
			}
			l.byInstance[s.InstanceID] = append(l.byInstance[s.InstanceID], s)
		}
		out[kind] = l
	}
	return out
}

// kindOf is the runtime kind of an instance, as runtime.Resolver has it.
func kindOf(inst container.Instance) string {
	k := inst.Spec.Runtime
	if k == "" {
		k = inst.Runtime
	}
	if k == "" {
		k = container.RuntimeDocker
	}
	return k
}

// containerOf picks the instance's container from a listing: the one on
// its recorded node (a container elsewhere is not the one berth addresses),
// or, with no node recorded, a running one before any other.
func containerOf(inst container.Instance, l *listing) *runtime.State {
	cands := l.byInstance[inst.ID]
	if inst.RuntimeNodeName != "" {
		for i := range cands {
			if cands[i].Node == inst.RuntimeNodeName {
				return &cands[i]
			}
		}
		return nil
	}
	for i := range cands {
		if cands[i].Phase == runtime.PhaseRunning {
			return &cands[i]
		}
	}
	if len(cands) > 0 {
		return &cands[0]
	}
	return nil
}

// verdict is what the runtime's state says should happen to an instance.
type verdict int

const (
	noChange verdict = iota
	observeStarted
	observeBackfill     // started, on a running instance without a node
	observeExited       // exited (with started first when the instance never ran)
	observeDestroyed    // gone from a complete list
	absentUnverified    // gone from a partial list: nothing may be concluded
	observeStartedFirst // creating + exited: started, then exited, as the create worker reports it
	observePaused       // running, its container paused (frozen)
	observeResumed      // paused, its container running again
)

// decide is the sync table of the package documentation. st is nil when
// the instance's container is not in the listing; complete says whether the
// listing covered every node; age is how long ago the instance changed.
func decide(inst container.Instance, st *runtime.State, complete bool, age, absentGrace time.Duration) verdict {
	ended := st != nil && (st.Phase == runtime.PhaseExited || st.Phase == runtime.PhaseDead)
	running := st != nil && st.Phase == runtime.PhaseRunning
	paused := st != nil && st.Phase == runtime.PhasePaused
	absent := func() verdict {
		switch {
		case !complete:
			return absentUnverified
		case age >= absentGrace:
			return observeDestroyed
		}
		return noChange
	}
	switch inst.Status {
	case fsm.Creating:
		switch {
		case running:
			return observeStarted
		case ended && age >= absentGrace:
			return observeStartedFirst
		}
	case fsm.Running, fsm.Paused:
		switch {
		case st == nil:
			return absent()
		case ended:
			return observeExited
		case running && inst.Status == fsm.Paused:
			return observeResumed
		case paused && inst.Status == fsm.Running && inst.RestartAt == nil:
			return observePaused
		case running && inst.RuntimeNodeName == "":
			return observeBackfill
		}
	case fsm.Starting:
		if running {
			return observeStarted
		}
	case fsm.Stopping:
		switch {
		case st == nil:
			return absent()
		case ended:
			return observeExited
		}
	}
	return noChange
}

// instance reconciles one active instance: sync with its container, and
// the stuck policy when the sync had nothing to say.
func (r *Reconciler) instance(ctx context.Context, log *slog.Logger, inst container.Instance, lists map[string]*listing,
	undispatched map[string]bool, undispatchedOK bool, rep *Report) {
	log = log.With("instance_id", inst.ID, "status", string(inst.Status))
	now := r.now()
	age := now.Sub(inst.UpdatedAt)
	l, ok := lists[kindOf(inst)]
	if !ok {
		// No runtime of its kind here: nothing to compare with, but the
		// stuck policy needs no runtime.
		rep.Skipped++
		r.stuck(ctx, log, inst, now, age, undispatched, undispatchedOK, rep)
		return
	}
	st := containerOf(inst, l)
	// A shard's runtimes list its nodes only: an instance with no node
	// recorded may have its container on another shard's, so its absence
	// here proves nothing.
	complete := l.complete && (r.shard.IsWhole() || inst.RuntimeNodeName != "")
	v := decide(inst, st, complete, age, r.absentGrace)
	if v == absentUnverified {
		rep.AbsentUnverified++
		v = noChange
	}
	if v != noChange {
		r.observe(ctx, log, inst, l.rt, st, v, now, rep)
		return
	}
	if l.unreachable(inst) && age < r.unavailableFor {
		// Whatever was asked waits for the runtime; re-enqueuing would
		// only add work that cannot run, and failing would give up on a
		// request the runtime never refused. Once it answers, a stuck
		// instance is re-enqueued (which also redrives a message the
		// outage sent to the dead-letter queue).
		if _, stuck := r.stuckFor(inst, age); stuck {
			rep.StuckRuntimeDown++
		}
		return
	}
	r.stuck(ctx, log, inst, now, age, undispatched, undispatchedOK, rep)
}

// observe hands what the runtime shows to the state loop, if the instance
// is still as it was listed.
func (r *Reconciler) observe(ctx context.Context, log *slog.Logger, inst container.Instance, rt runtime.Runtime,
	st *runtime.State, v verdict, now time.Time, rep *Report) {
	var obs []manager.Observation
	var op string
	switch v {
	case observeStarted, observeBackfill:
		full := r.detail(ctx, rt, *st)
		op = "observe_started"
		if v == observeBackfill {
			op = "backfill_node"
		} else if full.StartedAt == nil {
			// The inspect failed and the listing has no start time: a
			// start recorded at this pass's clock would read after the
			// run's own start, and its exit (judged by the run it ended)
			// would look late. The next pass inspects again.
			log.InfoContext(ctx, "running container's start time unknown; left to the next pass", "op", op)
			return
		}
		obs = append(obs, started(inst.ID, full, now))
	case observeExited, observeStartedFirst:
		full := r.detail(ctx, rt, *st)
		op = "observe_exited"
		if v == observeStartedFirst && full.StartedAt != nil {
			obs = append(obs, started(inst.ID, full, now))
		}
		at := now
		if full.FinishedAt != nil {
			at = *full.FinishedAt
		}
		obs = append(obs, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedExited, At: at, RunStartedAt: full.StartedAt,
			ExitCode: full.ExitCode, OOMKilled: full.OOMKilled, NodeName: full.Node, RuntimeID: full.RuntimeID,
			Message: full.Error, LastWords: runtime.LastWordsFrom(rt)})
	case observePaused, observeResumed:
		ob, ok := r.frozen(ctx, rt, inst, *st, v, now)
		if !ok {
			log.InfoContext(ctx, "container's pause changed since it was listed; left to the next pass")
			return
		}
		op, obs = "observe_"+string(ob.Kind), append(obs, ob)
	case observeDestroyed:
		op = "observe_destroyed"
		obs = append(obs, manager.Observation{InstanceID: inst.ID, Kind: manager.ObservedDestroyed, At: now,
			Message: fmt.Sprintf("not on any node of the %s runtime (reconciler)", kindOf(inst))})
	}
	log = log.With("op", op)

	// Decided on the listed instance: act only if it is still that version.
	fresh, err := r.st.GetInstance(ctx, inst.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		rep.Gone++
		return
	case err != nil:
		rep.fail(fmt.Errorf("%s %s: %w", op, inst.ID, err))
		log.ErrorContext(ctx, "reading instance", "error", err)
		return
	case fresh.Version != inst.Version:
		rep.Conflicts++
		log.InfoContext(ctx, "instance moved since it was listed; skipped this pass", "listed_version", inst.Version, "version", fresh.Version)
		return
	}
	for _, ob := range obs {
		applied, err := r.m.OnEvent(ctx, ob)
		if errors.Is(err, store.ErrConflict) {
			rep.Conflicts++
			log.InfoContext(ctx, "instance moved while applying; skipped this pass")
			return
		}
		if err != nil {
			rep.fail(fmt.Errorf("%s %s: %w", op, inst.ID, err))
			log.ErrorContext(ctx, "applying observation", "kind", ob.Kind, "error", err)
			return
		}
		switch applied {
		case manager.AppliedGone:
			rep.Gone++
			return
		case manager.AppliedRejected:
			rep.Rejected++
			log.WarnContext(ctx, "observation rejected by the FSM", "kind", ob.Kind)
			return
		case manager.AppliedTransition:
			switch ob.Kind {
			case manager.ObservedStarted:
				rep.Started++
			case manager.ObservedExited:
				rep.Exited++
			case manager.ObservedDestroyed:
				rep.Destroyed++
			case manager.ObservedPaused, manager.ObservedResumed:
				rep.Frozen++
			}
			log.InfoContext(ctx, "instance brought in line with its runtime", "kind", ob.Kind, "exit_code", exitAttr(ob.ExitCode),
				"oom_killed", ob.OOMKilled, "node", ob.NodeName)
		case manager.AppliedNoop:
			if v == observeBackfill {
				rep.NodeBackfilled++
				log.InfoContext(ctx, "runtime_node_name backfilled", "node", ob.NodeName)
			}
		}
	}
}

func started(id string, st runtime.State, now time.Time) manager.Observation {
	at := now
	if st.StartedAt != nil {
		at = *st.StartedAt
	}
	return manager.Observation{InstanceID: id, Kind: manager.ObservedStarted, At: at, NodeName: st.Node, RuntimeID: st.RuntimeID,
		Endpoints: st.Endpoints}
}

// detail inspects one differing container for what a listing lacks (OOM
// kill, exact times, the runtime's error); the listed state stands in if
// the inspect fails.
func (r *Reconciler) detail(ctx context.Context, rt runtime.Runtime, st runtime.State) runtime.State {
	full, err := rt.Inspect(ctx, runtime.Ref{InstanceID: st.InstanceID, Node: st.Node, RuntimeID: st.RuntimeID})
	if err != nil {
		return st
	}
	if full.Node == "" {
		full.Node = st.Node
	}
	if full.ExitCode == nil {
		full.ExitCode = st.ExitCode
	}
	return full
}

func exitAttr(code *int) any {
	if code == nil {
		return nil
	}
	return *code
}
