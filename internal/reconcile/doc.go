// Package reconcile is berth's recovery loop, which brings stored statuses
// back in line with what the runtimes report: one bounded pass,
// Reconciler.Run, that the reconciler Lambda runs on an EventBridge schedule
// and the local server runs on a ticker (Reconciler.Service). A pass
//
//  1. syncs every non-terminal instance with its runtime, from ONE
//     runtime.List per runtime and a paged store.ListActive, feeding the
//     differences to manager.OnEvent (the state loop);
//  2. re-enqueues (or fails) instances stuck in a transient status;
//  3. has the outbox sweeper re-dispatch stale outbox items;
//  4. removes orphaned containers (berth-labelled, no instance);
//  5. repairs the create admission counter.
//
// # Safety beside workers and other reconcilers
//
// Every decision is taken on the instance as listed (status, version,
// updated_at). Writes are conditional on that version: the reconciler's own
// writes are manager intents (Requeue, Fail) guarded by the listed version
// (manager.ErrMoved at any other), and before an observation
// is handed to OnEvent the instance is read again (a consistent read) and
// must still be at the listed version. A version that moved on, or an
// ErrConflict, means a worker, the API or another reconciler got there
// first: the instance is skipped for this pass (Report.Conflicts). Runtime
// calls the reconciler makes (Delete of an orphan) are idempotent.
//
// # Sync: what a runtime difference leads to
//
// Only statuses in which nothing else in berth is working on the container
// are judged from the runtime's state; the others are left to the worker
// that owns them and, if it never finishes, to the stuck policy below.
//
//	instance        container running      exited / dead        absent (complete list, updated_at older than AbsentGrace)
//	creating        started → running      started+exited *     — (stuck policy: the create may still be pulling the image)
//	running         node backfill if empty exited → stopped/failed  destroyed → failed "container removed outside berth"
//	                paused → paused (†)
//	paused          resumed → running (†)  exited               destroyed → failed
//	starting        started → running      — (worker starts it) — (the start worker recreates a missing container)
//	stopping        —                      exited → stopped     destroyed → stopped
//	pending, start_pending, stop_pending, delete_pending, deleting: never judged from the runtime
//
// (†) a running instance's container found paused, or a paused one's
// running, is a pause or resume whose worker has not recorded it yet, or
// one made outside berth: the container is inspected again and, still so,
// the state loop records running ⇄ paused (manager.ObservedPaused,
// ObservedResumed). A running instance awaiting its restart (restart_at
// set) is never judged paused: its container has exited.
//
// (*) only once updated_at is older than AbsentGrace, so the create worker's
// own report (started, then exited) normally comes first. Exit code, OOM
// kill and times come from one Inspect of the differing container only.
// Absence is never taken from a partial listing (a node that did not answer
// makes the whole runtime's listing partial: Report.ListPartial). An
// instance of a runtime kind the reconciler was not given is not synced
// (Report.Skipped); the stuck policy still applies to it.
//
// # Stuck transient statuses: the policy
//
// An instance whose status is transient and whose updated_at is older than
// that status's timeout (Options.Timeouts, defaults from TimeoutsFor) made
// no progress, and the work that should move it is lost: a dispatched
// message the local in-process queue dropped in a restart, a worker killed
// on its last attempt, a message dead-lettered without its failure being
// recorded. Instances with an undispatched outbox item are skipped: that
// item is the sweeper's job (Report.StuckLeftToSweeper).
//
//	status                       re-enqueued op   default timeout
//	pending                      create           ceil(max_pending/max_concurrency) × create_start_timeout + 5m
//	creating                     create           create_start_timeout + 5m
//	start_pending, starting      start            create_start_timeout + 5m (the start waits for stability too)
//	stop_pending, stopping       stop             max(10m, stop_grace_period + 5m)
//	delete_pending, deleting     delete           max(10m, stop_grace_period + 5m)
//
// The action is the same for every transient status: re-enqueue the
// operation that status is waiting for — a field-only transition through
// manager.Requeue (status unchanged, guarded by the listed version) that writes a fresh pending outbox item
// and an event (Actor "berth", message starting "reconciler re-enqueued"),
// so the normal pipeline (dispatcher, queue, worker) retries it. Workers are
// idempotent (they accept an instance already in the in-progress status and
// adopt what an earlier attempt made), so a re-enqueue that races a slow
// original does no harm. The transition also resets updated_at, which
// restarts the timeout. After Options.MaxRequeues re-enqueues in the same
// status episode (counted from the instance's events since it entered the
// status) the instance goes to failed with a status_reason that says which
// status made no progress for how long; failed → delete_pending lets the
// user clean up. MaxRequeues < 0 fails at once.
//
// A stuck instance whose runtime does not answer in this pass (its node is
// missing from a partial listing, or it has no node and some node is) is
// left alone (Report.StuckRuntimeDown) for up to Options.UnavailableRetryFor
// since its last change: the worker waits that long for an unreachable
// runtime too, and neither a re-enqueue nor a failure helps a request the
// runtime never refused. Once the runtime answers, the instance is
// re-enqueued as above, which also redrives an operation whose message an
// outage left in the dead-letter queue.
//
// # Orphans
//
// A container of the reconciler's scope whose instance id is not an active
// instance of this pass is looked up with GetInstance; ErrNotFound means its
// instance is gone and the container is removed (runtime.Delete) once older
// than OrphanGrace (from the container's CreatedAt, so a create racing its
// instance write is never touched). Containers of stopped and failed
// instances are kept: they are restartable or await the user's delete.
//
// # Terminal instances
//
// The same look-up brings terminal instances in line with a container that
// runs although berth says it does not (started behind berth's back, or
// while berth was down), whatever the container's age (a terminal instance
// has no create in flight for the grace to protect): a stopped instance is
// recorded as running through OnEvent, since the FSM allows stopped →
// running; a failed one may not run (failed → running is not allowed), so
// its container is stopped (Options.StopGrace) and a ContainerReconciled
// event says so (Report.TerminalStopped). Converge applies the same rule to
// one instance at once: berth serve's monitor calls it for a start the FSM
// refused (monitor.Converging).
package reconcile
