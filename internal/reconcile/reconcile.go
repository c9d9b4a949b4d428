package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/startstop"
	"github.com/berth-io/berth/internal/store"
)

// Sweeper re-dispatches outbox items that stayed pending longer than
// olderThan and returns how many it handed on. The outbox package's
// dispatcher implements it; declared here so the reconciler does not depend
// on the dispatcher's concrete type.
type Sweeper interface {
	Sweep(ctx context.Context, olderThan time.Duration) (int, error)
}

// Defaults of Options.
const (
	DefaultAbsentGrace = time.Minute
	// DefaultOrphanGrace is container.orphan_grace's default, kept in
	// config with the key.
	DefaultOrphanGrace = config.DefaultOrphanGrace
	DefaultMaxRequeues = 2
	// DefaultMaxInstances covers 20,000 active instances in one pass: a
	// shard of the default size (fleetshard.DefaultNodesPerShard hosts; the
	// hash gives a shard up to 1.15 times that, BenchmarkReconcileShards) at
	// 100 instances a host, and a whole pass of 200 such hosts (10,000 took
	// 1.2 s on bolt and 2.5 s on DynamoDB Local, BenchmarkReconcileScale;
	// 100,000 took 14 s on bolt). A smaller window leaves the containers of
	// the instances beyond it looking like orphans, each costing a point
	// read, and the pass truncated.
	DefaultMaxInstances = 20000
	DefaultPassTimeout  = 2 * time.Minute
	// StuckMargin is added to the longest legitimate duration of a status
	// to get its stuck timeout (TimeoutsFor).
	StuckMargin = 5 * time.Minute
	// maxUndispatched bounds the snapshot of undispatched outbox items.
	maxUndispatched = 1000
	// pageSize is the ListActive page size (the store's maximum).
	pageSize = 100
	// maxErrorSamples bounds Report.ErrorSamples.
	maxErrorSamples = 5
)

// RequeueMarker starts the message of every re-enqueue event; the stuck
// policy counts them to bound re-enqueues.
const RequeueMarker = "reconciler re-enqueued "

// Manager is how the reconciler changes instances. Every instance write
// goes through it (manager.Manager implements it) as an intent decided on
// the version the pass listed, so there is one writer of state with one
// conflict-retry rule (manager.MaxConflictRetries) and one group policy.
// An intent whose instance moved since it was listed is manager.ErrMoved.
type Manager interface {
	// OnEvent applies what a runtime shows through the state loop.
	OnEvent(ctx context.Context, ob manager.Observation) (manager.Applied, error)
	// Record appends an event to a listed instance's history without
	// changing its status, if it is still at the listed version.
	Record(ctx context.Context, inst container.Instance, ev container.Event) error
	// Requeue asks again for the operation a listed instance waits for.
	Requeue(ctx context.Context, inst container.Instance, op container.Op, reason, requestID string, at time.Time) (string, error)
	// Fail fails an instance with a reason and its group policy.
	Fail(ctx context.Context, id string, f manager.Failure) (bool, error)
	// Expire carries out an instance's reached deadline (its lifetime,
	// or its retention once ended), once at most whoever else calls it.
	Expire(ctx context.Context, id string, at time.Time) (manager.ExpiryOutcome, error)
}

var _ Manager = (*manager.Manager)(nil)

// Store is what the reconciler reads, and the admission counter's repair
// (a recount, no instance write).
type Store interface {
	GetInstance(ctx context.Context, id string) (container.Instance, error)
	ListActive(ctx context.Context, cursor string, limit int) (store.Page[container.Instance], error)
	// ListActiveInBucket is read instead of ListActive by a shard's pass.
	ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (store.Page[container.Instance], error)
	// ListDeadlines is read for the ended instances due (their retention).
	ListDeadlines(ctx context.Context, until time.Time, cursor string, limit int) (store.Page[container.Instance], error)
	ListEvents(ctx context.Context, instanceID, cursor string, limit int) (store.Page[container.Event], error)
	ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error)
	RepairAdmission(ctx context.Context) (before, after int, err error)
}

var _ Store = (store.Store)(nil)

// Options configure a Reconciler.
type Options struct {
	// Manager writes instances; Store reads them. Both are required.
	Manager Manager
	Store   Store
	// Runtimes are listed once each per pass. Instances of a runtime kind
	// not given here are not synced (Report.Skipped); the stuck policy
	// still applies to them. A shard's pass is given runtimes over the
	// shard's nodes only (configured.ForShard).
	Runtimes []runtime.Runtime
	// Shard is the part of the fleet a pass covers. The zero Shard (or
	// any whole one) is every instance and node. A shard's pass examines
	// the active instances of its buckets only (store.NodeBucket), and
	// the steps that are the fleet's as a whole (retention, the outbox
	// sweep, the admission counter's repair) only when Shard.Leads().
	Shard fleetshard.Shard
	// Scope is the runtimes' scope label (docker.Options.Scope): only
	// containers whose berth.scope label equals it (none when empty) are
	// reconciled, so a deployment never removes another's containers on a
	// shared engine.
	Scope string
	// Sweeper re-dispatches stale pending outbox items; nil skips that step.
	Sweeper Sweeper
	// OutboxStaleAfter is what Sweep is given (container.outbox_sweep_after).
	OutboxStaleAfter time.Duration
	// AbsentGrace: a container absent from a complete list is taken as
	// destroyed only when the instance's updated_at is older than this.
	AbsentGrace time.Duration
	// OrphanGrace: a container without an instance is removed only when
	// it was created longer ago than this.
	OrphanGrace time.Duration
	// Timeouts are the stuck timeouts per transient status; a status
	// missing from the map is never treated as stuck. Nil means
	// TimeoutsFor(config defaults).
	Timeouts map[fsm.Status]time.Duration
	// MaxRequeues bounds re-enqueues of a stuck instance in one status
	// episode before it is failed. Zero means DefaultMaxRequeues; negative
	// means fail at once.
	MaxRequeues int
	// UnavailableRetryFor is how long the stuck policy leaves an instance
	// whose runtime does not answer (container.unavailable_retry_for), as
	// the worker waits for it. Defaults to config.DefaultUnavailableRetryFor.
	UnavailableRetryFor time.Duration
	// StopGrace is what stopping a failed instance's running container
	// gives its process (container.stop_grace_period). Defaults to the
	// config's default.
	StopGrace time.Duration
	// MaxInstances bounds the active instances one pass examines (and the
	// orphan look-ups it makes); the next pass resumes where it stopped.
	// Defaults to DefaultMaxInstances.
	MaxInstances int
	// PassTimeout bounds one pass (a shorter ctx deadline wins).
	PassTimeout time.Duration
	Clock       func() time.Time
	Logger      *slog.Logger
	Metrics     *metrics.Emitter
}

// TimeoutsFor derives the stuck timeouts from the container section (see
// the package documentation for the table).
func TimeoutsFor(c config.Container) map[fsm.Status]time.Duration {
	createTO := c.CreateStartTimeout
	if createTO <= 0 {
		createTO = config.DefaultCreateStartTimeout
	}
	conc := max(c.CreateQueueMaxConcurrency, 1)
	waves := 1
	if c.CreateQueueMaxPending > 0 {
		waves = int(math.Ceil(float64(c.CreateQueueMaxPending) / float64(conc)))
	}
	lifecycle := max(10*time.Minute, c.StopGracePeriod+StuckMargin)
	return map[fsm.Status]time.Duration{
		fsm.Pending:       time.Duration(waves)*createTO + StuckMargin,
		fsm.Creating:      createTO + StuckMargin,
		fsm.StartPending:  createTO + StuckMargin,
		fsm.Starting:      createTO + StuckMargin,
		fsm.StopPending:   lifecycle,
		fsm.Stopping:      lifecycle,
		fsm.DeletePending: lifecycle,
		fsm.Deleting:      lifecycle,
	}
}

// Report counts what one pass did. It is the reconciler Lambda's result.
type Report struct {
	PassID     string    `json:"pass_id"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// Shard of Shards is the part of the fleet the pass covered (0 of 1:
	// the whole fleet), as the fan-out's message names it.
	Shard  int `json:"shard"`
	Shards int `json:"shards"`

	// Instances is how many active instances were examined; Containers how
	// many containers of the scope the runtimes listed.
	Instances  int `json:"instances"`
	Containers int `json:"containers"`
	// ListPartial: a runtime's listing missed a node, so no absence was
	// acted on (AbsentUnverified counts the instances it spared).
	ListPartial      bool `json:"list_partial"`
	AbsentUnverified int  `json:"absent_unverified"`
	// Truncated: the pass stopped at MaxInstances or at its deadline.
	Truncated bool `json:"truncated"`

	// Sync (through manager.OnEvent).
	Started        int `json:"started"`         // → running
	NodeBackfilled int `json:"node_backfilled"` // running instance got its runtime_node_name
	Exited         int `json:"exited"`          // → stopped or failed with the exit code
	Destroyed      int `json:"destroyed"`       // → failed (or stopped, when stopping)
	Rejected       int `json:"rejected"`        // OnEvent recorded TransitionRejected
	// Frozen: running ⇄ paused, from a container found paused or resumed.
	Frozen int `json:"frozen"`
	// TerminalStopped: running containers of failed instances stopped.
	TerminalStopped int `json:"terminal_stopped"`

	// Stuck transient statuses.
	Requeued           int `json:"requeued"`
	FailedStuck        int `json:"failed_stuck"`
	StuckLeftToSweeper int `json:"stuck_left_to_sweeper"`
	// StuckRuntimeDown: stuck instances left alone because their runtime
	// did not answer (re-enqueued once it does).
	StuckRuntimeDown int `json:"stuck_runtime_down"`

	// Orphans.
	OrphansRemoved  int `json:"orphans_removed"`
	OrphansDeferred int `json:"orphans_deferred"` // younger than OrphanGrace: not removed as orphans yet

	// Expired: active instances past a deadline whose action this pass
	// requested (the timers had not): a lifetime's stop or delete, or a
	// restart's start.
	Expired int `json:"expired"`
	// RetentionDeleted: ended instances past their delete_at whose delete
	// this pass requested.
	RetentionDeleted int `json:"retention_deleted"`

	// Outbox sweep; SweepSkipped when no sweeper is configured or the
	// pass is a shard's that does not lead (fleetshard.Shard.Leads).
	OutboxSwept  int  `json:"outbox_swept"`
	SweepSkipped bool `json:"sweep_skipped"`

	// Admission counter before and after the repair.
	AdmissionBefore int `json:"admission_before"`
	AdmissionAfter  int `json:"admission_after"`

	// Conflicts: instances skipped because something else moved them
	// between the listing and the write. Gone: deleted meanwhile.
	Conflicts int `json:"conflicts"`
	Gone      int `json:"gone"`
	// Skipped: instances whose runtime kind is not configured here: not
	// compared with a runtime (the stuck policy still applies to them).
	Skipped      int      `json:"skipped"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
}

// Actions is the number of changes the pass made.
func (r Report) Actions() int {
	return r.Started + r.NodeBackfilled + r.Exited + r.Destroyed + r.Frozen + r.TerminalStopped + r.Requeued + r.FailedStuck + r.OrphansRemoved + r.OutboxSwept + r.Expired + r.RetentionDeleted
}

func (r *Report) fail(err error) {
	r.Errors++
	if len(r.ErrorSamples) < maxErrorSamples {
		r.ErrorSamples = append(r.ErrorSamples, err.Error())
	}
}

// Reconciler runs reconcile passes. It is safe for concurrent use; passes
// of one Reconciler run one at a time, and passes of several (other
// processes, other Lambda invocations) may overlap safely.
type Reconciler struct {
	m              Manager
	st             Store
	rts            map[string]runtime.Runtime
	kinds          []string
	scope          string
	sweeper        Sweeper
	staleAfter     time.Duration
	absentGrace    time.Duration
	orphanGrace    time.Duration
	timeouts       map[fsm.Status]time.Duration
	maxRequeues    int
	unavailableFor time.Duration
	stopGrace      time.Duration
	maxInstances   int
	passTimeout    time.Duration
	shard          fleetshard.Shard
	now            func() time.Time
	log            *slog.Logger
	metrics        *metrics.Emitter

	mu sync.Mutex
	// bucketAt is the index in sources() of the source a truncated pass
	// stopped in, and cursor where in it the next pass resumes.
	bucketAt int
	cursor   string
}

// New returns a Reconciler.
func New(o Options) (*Reconciler, error) {
	if o.Manager == nil || o.Store == nil {
		return nil, errors.New("reconcile: Options.Manager and Options.Store are required")
	}
	if err := o.Shard.Validate(); err != nil {
		return nil, fmt.Errorf("reconcile: Options.Shard: %w", err)
	}
	r := &Reconciler{
		m: o.Manager, st: o.Store, rts: make(map[string]runtime.Runtime), scope: o.Scope,
		sweeper: o.Sweeper, staleAfter: o.OutboxStaleAfter, absentGrace: o.AbsentGrace, orphanGrace: o.OrphanGrace,
		timeouts: o.Timeouts, maxRequeues: o.MaxRequeues, unavailableFor: o.UnavailableRetryFor, stopGrace: o.StopGrace, maxInstances: o.MaxInstances, passTimeout: o.PassTimeout,
		now: o.Clock, log: o.Logger, metrics: o.Metrics, shard: o.Shard,
	}
	for _, rt := range o.Runtimes {
		k := rt.Kind()
		if _, dup := r.rts[k]; dup {
			return nil, fmt.Errorf("reconcile: two runtimes of kind %q", k)
		}
		r.rts[k] = rt
		r.kinds = append(r.kinds, k)
	}
	def := config.Default().Container
	if r.staleAfter <= 0 {
		r.staleAfter = def.OutboxSweepAfter
	}
	if r.absentGrace <= 0 {
		r.absentGrace = DefaultAbsentGrace
	}
	if r.orphanGrace <= 0 {
		r.orphanGrace = DefaultOrphanGrace
	}
	if r.timeouts == nil {
		r.timeouts = TimeoutsFor(def)
	}
	switch {
	case r.maxRequeues == 0:
		r.maxRequeues = DefaultMaxRequeues
	case r.maxRequeues < 0:
		r.maxRequeues = 0
	}
	if r.stopGrace <= 0 {
		r.stopGrace = def.StopGracePeriod
	}
	if r.unavailableFor <= 0 {
		r.unavailableFor = config.DefaultUnavailableRetryFor
	}
	if r.maxInstances <= 0 {
		r.maxInstances = DefaultMaxInstances
	}
	if r.passTimeout <= 0 {
		r.passTimeout = DefaultPassTimeout
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.shard.IsWhole() {
		r.shard = fleetshard.Whole()
	}
	return r, nil
}

// Service is the reconciler as the local server's background service: a
// pass at once and then every interval (startstop.Every) until it is
// stopped. Failed passes are logged; the next one tries again.
func (r *Reconciler) Service(every time.Duration) *startstop.Loop {
	return startstop.New("reconciler", startstop.Every(every, func(ctx context.Context) {
		if _, err := r.Run(ctx); err != nil && ctx.Err() == nil {
			r.log.ErrorContext(ctx, "reconcile pass failed", "error", err)
		}
	}))
}

// Run makes one bounded pass. The error is for a pass that could not be
// made (the store unreachable, ctx cancelled by the caller); failures on
// single instances or containers are counted in the Report and logged, and
// the pass goes on. A pass that reaches PassTimeout or ctx's deadline stops
// where it is and reports Truncated, without an error.
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	rep := Report{PassID: container.NewID(), StartedAt: r.now().UTC(), Shard: r.shard.Index, Shards: r.shard.Count}
	log := r.log.With("pass_id", rep.PassID)
	if !r.shard.IsWhole() {
		log = log.With("shard", r.shard.String())
	}
	pctx, cancel := context.WithTimeout(ctx, r.passTimeout)
	defer cancel()

	err := r.pass(pctx, log, &rep)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller gave up on the pass (shutdown): say so.
		err = ctx.Err()
	case errors.Is(pctx.Err(), context.DeadlineExceeded):
		// PassTimeout or the caller's deadline: the bound worked, what was
		// done is reported, and the next pass goes on from there.
		rep.Truncated = true
		err = nil
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	r.emit(rep, time.Since(start))
	attrs := []any{"duration_ms", rep.DurationMS, "instances", rep.Instances, "containers", rep.Containers,
		"actions", rep.Actions(), "started", rep.Started, "node_backfilled", rep.NodeBackfilled, "exited", rep.Exited,
		"destroyed", rep.Destroyed, "frozen", rep.Frozen, "terminal_stopped", rep.TerminalStopped, "requeued", rep.Requeued, "failed_stuck", rep.FailedStuck,
		"orphans_removed", rep.OrphansRemoved, "outbox_swept", rep.OutboxSwept, "expired", rep.Expired, "retention_deleted", rep.RetentionDeleted,
		"admission_before", rep.AdmissionBefore, "admission_after", rep.AdmissionAfter,
		"conflicts", rep.Conflicts, "errors", rep.Errors, "list_partial", rep.ListPartial, "truncated", rep.Truncated}
	if err != nil {
		log.ErrorContext(ctx, "reconcile pass failed", append(attrs, "error", err)...)
		return rep, err
	}
	log.InfoContext(ctx, "reconcile pass done", attrs...)
	return rep, nil
}

func (r *Reconciler) pass(ctx context.Context, log *slog.Logger, rep *Report) error {
	// The undispatched snapshot comes first: the sweep at the end of the
	// pass marks items dispatched, and an instance whose item it just
	// re-dispatched must not look as if it had no work.
	undispatched, undispatchedOK := r.undispatched(ctx, log, rep)

	insts, err := r.listActive(ctx, rep)
	if err != nil {
		return fmt.Errorf("reconcile: listing active instances: %w", err)
	}
	rep.Instances = len(insts)
	lists := r.listRuntimes(ctx, log, rep)

	seen := make(map[string]bool, len(insts))
	for _, inst := range insts {
		seen[inst.ID] = true
	}
	for _, inst := range insts {
		if ctx.Err() != nil {
			return nil
		}
		if r.expire(ctx, log, inst, rep) {
			continue
		}
		r.instance(ctx, log, inst, lists, undispatched, undispatchedOK, rep)
	}
	if ctx.Err() != nil {
		return nil
	}
	r.orphans(ctx, log, lists, seen, rep)
	if ctx.Err() != nil {
		return nil
	}
	if !r.shard.Leads() {
		rep.SweepSkipped = true // the leading shard's, once for the fleet
		return nil
	}
	r.retain(ctx, log, rep)
	if ctx.Err() != nil {
		return nil
	}
	r.sweep(ctx, log, rep)
	if ctx.Err() != nil {
		return nil
	}
	before, after, err := r.st.RepairAdmission(ctx)
	if err != nil {
		rep.fail(fmt.Errorf("repairing the admission counter: %w", err))
		log.ErrorContext(ctx, "repairing the admission counter", "op", "repair_admission", "error", err)
		return nil
	}
	rep.AdmissionBefore, rep.AdmissionAfter = before, after
	if before != after {
		log.WarnContext(ctx, "admission counter repaired", "op", "repair_admission", "before", before, "after", after)
	}
	return nil
}

// undispatched returns the instances that have an undispatched outbox item
// (the sweeper's), and whether the snapshot could be read.
func (r *Reconciler) undispatched(ctx context.Context, log *slog.Logger, rep *Report) (map[string]bool, bool) {
	items, err := r.st.ListUndispatched(ctx, r.now().Add(time.Minute), maxUndispatched)
	if err != nil && ctx.Err() != nil {
		return nil, false // the pass is out of time; it says so as Truncated
	}
	if err != nil {
		rep.fail(fmt.Errorf("listing undispatched outbox items: %w", err))
		log.ErrorContext(ctx, "listing undispatched outbox items; no stuck instance is handled this pass", "error", err)
		return nil, false
	}
	out := make(map[string]bool, len(items))
	for _, it := range items {
		out[it.InstanceID] = true
	}
	return out, true
}

func (r *Reconciler) sweep(ctx context.Context, log *slog.Logger, rep *Report) {
	if r.sweeper == nil {
		rep.SweepSkipped = true
		return
	}
	n, err := r.sweeper.Sweep(ctx, r.staleAfter)
	rep.OutboxSwept = n
	if err != nil {
		rep.fail(fmt.Errorf("sweeping the outbox: %w", err))
		log.ErrorContext(ctx, "sweeping the outbox", "op", "sweep_outbox", "error", err)
		return
	}
	if n > 0 {
		log.InfoContext(ctx, "stale outbox items re-dispatched", "op", "sweep_outbox", "count", n)
	}
}

// emit writes the pass's EMF metrics.
func (r *Reconciler) emit(rep Report, d time.Duration) {
	if r.metrics == nil {
		return
	}
	r.metrics.Duration("ReconcileDuration", d)
	r.metrics.Count("ReconcileInstances", float64(rep.Instances))
	for _, a := range []struct {
		name string
		n    int
	}{
		{"started", rep.Started}, {"node_backfilled", rep.NodeBackfilled}, {"exited", rep.Exited},
		{"destroyed", rep.Destroyed}, {"frozen", rep.Frozen}, {"terminal_stopped", rep.TerminalStopped}, {"requeued", rep.Requeued}, {"failed_stuck", rep.FailedStuck},
		{"orphan_removed", rep.OrphansRemoved}, {"outbox_swept", rep.OutboxSwept}, {"expired", rep.Expired},
		{"retention_deleted", rep.RetentionDeleted}, {"conflict", rep.Conflicts},
	} {
		if a.n > 0 {
			r.metrics.Count("ReconcileActions", float64(a.n), "Action", a.name)
		}
	}
	if rep.Errors > 0 {
		r.metrics.Count("ReconcileErrors", float64(rep.Errors))
	}
	if d := rep.AdmissionBefore - rep.AdmissionAfter; d != 0 {
		r.metrics.Count("AdmissionDrift", math.Abs(float64(d)))
	}
	if rep.ListPartial {
		r.metrics.Count("ReconcilePartialLists", 1)
	}
}
