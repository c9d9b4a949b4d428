// Package store declares how berth persists instances, their events, the
// outbox, the create admission counter, templates and idempotency records,
// and holds the conformance suite (storetest) every backend must pass.
//
// Every method is atomic: it commits all of its writes or none. Errors the
// caller can act on are matchable with errors.Is: ErrNotFound, ErrConflict,
// ErrAlreadyExists, ErrQueueFull, ErrInvalidParams and
// fsm.ErrInvalidTransition. Anything else
// means the store could not be reached or failed; callers may retry it.
//
// Instance writes are composed from rules. PlanCreate, PlanTransition and
// PlanDelete (write.go) describe a write once for every backend: they set
// the fields the store owns, then each rule (a rule_*.go file: outbox
// item, deliveries, admission, quota reservations, completion, dispatch mark, idempotency,
// template check) adds its parts (parts.go); the bind ledger's writes
// follow rule_bindledger.go. A backend commits a Write in
// one transaction with one small applier per kind of part, and knows no
// rule. So a new rule is a file here and a conformance case in storetest;
// only a new kind of part also needs an applier in each backend, as the
// quota reservations (rule_quota.go, part QuotaReserve) have.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Errors returned by every backend.
var (
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("conflict: the item changed since it was read")
	ErrAlreadyExists = errors.New("already exists")
	ErrQueueFull     = errors.New("create queue full")
	// ErrOwnerQueueFull: the owner already has MaxPendingPerOwner
	// unfinished creates. It matches ErrQueueFull too.
	ErrOwnerQueueFull = fmt.Errorf("%w: the owner's share is taken", ErrQueueFull)
	ErrUnavailable    = errors.New("store unavailable")
	// ErrInvalidCursor: a cursor this store did not hand out (or for
	// another listing); the caller's mistake, never retried.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrDuplicateRequest: CreateParams.Idempotency names an (owner, key)
	// that already has a live record; nothing was written.
	ErrDuplicateRequest = errors.New("idempotency key already used")
	// ErrTemplateChanged: CreateParams.Template is no longer the stored
	// template (changed or deleted since it was read).
	ErrTemplateChanged = errors.New("template changed since it was read")
	// ErrBindLedgerChanged: a bind ledger write's expected version is no
	// longer the stored one (another write came first); nothing was
	// written. The caller reads the ledger again and retries.
	ErrBindLedgerChanged = errors.New("bind ledger changed since it was read")
)

// EventRetention is how long an instance's events stay readable after the
// instance is deleted.
const EventRetention = 7 * 24 * time.Hour

// OutboxRetention is how long finished outbox items (done or failed) are
// kept before they expire. A failed item's reason stays on its instance
// (status_reason and the event history), so the item itself is only
// bookkeeping.
const OutboxRetention = 24 * time.Hour

// OutboxMaxAge bounds the life of every outbox item from its creation,
// finished or not: an item nothing finished in that long is work that was
// lost and replaced (the reconciler re-enqueues a stuck instance with a
// fresh item) or whose instance is gone. It is longer than any operation
// may wait for its runtime (config.MaxUnavailableRetryFor).
const OutboxMaxAge = 30 * 24 * time.Hour

// OutboxExpiresAt is when an outbox item expires: OutboxRetention after it
// finished, and OutboxMaxAge after its creation at the latest. Both
// backends hide expired items from reads before they are removed.
func OutboxExpiresAt(ob container.OutboxItem) time.Time {
	last := ob.CreatedAt.Add(OutboxMaxAge)
	if ob.State == container.OutboxDone || ob.State == container.OutboxFailed {
		if done := ob.UpdatedAt.Add(OutboxRetention); done.Before(last) {
			return done
		}
	}
	return last
}

// OutboxExpired reports whether ob has expired at now.
func OutboxExpired(ob container.OutboxItem, now time.Time) bool {
	return !now.Before(OutboxExpiresAt(ob))
}

// IdempotencyRetention is how long an idempotency record answers repeats.
const IdempotencyRetention = 24 * time.Hour

// Store is berth's persistence. Implementations: dynamostore (AWS) and
// boltstore (the local server). Both pass storetest.Run.
type Store interface {
	InstanceStore
	OutboxStore
	AdmissionStore
	TemplateStore
	BindLedgerStore
	IdempotencyStore
	WebhookStore
	DeliveryStore
	DeploymentStore
	QuotaStore
	UsageStore
	LeaseStore
}

// BindLedgerStore keeps the bind ledger (container.BindLedger): one
// document, written only conditionally on its version, alone or with the
// template whose bind sources it records.
type BindLedgerStore interface {
	// GetBindLedger returns the stored ledger, or a zero one (Version 0,
	// no entries) when none was ever stored.
	GetBindLedger(ctx context.Context) (container.BindLedger, error)
	// PutBindLedger replaces the ledger if the stored one is still at
	// l.Version (0: none stored), and returns it as stored, at
	// l.Version+1; else ErrBindLedgerChanged and nothing is written.
	PutBindLedger(ctx context.Context, l container.BindLedger) (container.BindLedger, error)
	// PutTemplateWithLedger is PutTemplate and PutBindLedger in one
	// transaction: both are written, or neither (ErrBindLedgerChanged when
	// the ledger moved on).
	PutTemplateWithLedger(ctx context.Context, t container.Template, l container.BindLedger) (stored container.Template, created bool, err error)
}

// CreateParams is everything a create writes in one transaction.
type CreateParams struct {
	// Instance must have an ID, Status pending (or empty) and Version 1
	// (or 0); the store sets EventSeq to 1 (PlanCreate is the rule).
	Instance container.Instance
	// Outbox is the create request; its InstanceID and InstanceVersion must
	// match the instance, or be empty to be filled in from it.
	Outbox container.OutboxItem
	// Event is the instance's first event; the store sets Seq to 1.
	Event container.Event
	// MaxPending bounds unfinished creates (instances in pending or
	// creating). Zero or less means no bound.
	MaxPending int
	// MaxPendingPerOwner bounds the unfinished creates of the instance's
	// owner (ErrOwnerQueueFull beyond). Zero or less, or not below
	// MaxPending, means no bound of its own.
	MaxPendingPerOwner int
	// Idempotency, if set, is stored in the same transaction; if its
	// (Owner, Key) already has a live record the create fails with
	// ErrDuplicateRequest and writes nothing.
	Idempotency *IdempotencyRecord
	// Template, if set, is the template the instance was built from as the
	// caller holds it (a copy read earlier): the create is made only if the
	// stored template is still exactly that one (same TemplateDoc), checked
	// in the same transaction, else it fails with ErrTemplateChanged and
	// writes nothing. It lets a caller skip reading the template per create.
	Template *container.Template
	// Quota, if set, bounds what the create reserves of its owner's
	// quotas and its team's (Instance.Team), checked in the same
	// transaction: ErrQuotaExceeded (a *QuotaError) and nothing written
	// when one would be passed. Unset: the use is counted, never refused.
	Quota *QuotaLimits
	// Deliveries are webhook deliveries (OpDeliver items) of the create
	// itself (from no status to pending), written in the same
	// transaction; PrepareOutbox fills in each one's instance and sequence
	// number (1).
	Deliveries []container.OutboxItem
}

// TransitionParams describes one conditional status change.
type TransitionParams struct {
	// ID and ExpectVersion name the instance as the caller read it; the
	// change is made only if the stored version still equals ExpectVersion.
	ID            string
	ExpectVersion int64
	// From must equal the stored status; To must be allowed by fsm.Check.
	// To == From is allowed for field-only updates (no status change).
	From, To fsm.Status
	// Update, if set, changes other fields of the instance in the same
	// write. It receives a copy of the stored instance with Status already
	// set to To; it must not change ID, Owner, Version or EventSeq.
	Update func(*container.Instance)
	// Outbox, if set, is written in the same transaction. It is for the
	// instance as the write leaves it: its InstanceID and InstanceVersion
	// are ID and ExpectVersion+1, or empty to be filled in (PrepareOutbox).
	Outbox *container.OutboxItem
	// Event, if set, is appended in the same transaction (Seq is assigned).
	Event *container.Event
	// CompleteOutboxID, if set, marks that outbox item done in the same
	// transaction, so a worker's last step and its bookkeeping commit together.
	CompleteOutboxID string
	// DispatchOutboxID, if set, marks that outbox item dispatched in the
	// same transaction when it is still pending (DispatchedAt: the write's
	// time), so that a worker's claim carries the dispatch mark and the
	// local server's dispatcher need not write it. A dispatched item keeps
	// its DispatchedAt; a done, failed or missing one is left as it is and
	// does not fail the write.
	DispatchOutboxID string
	// Quota, if set, bounds what the change reserves (a start request:
	// running, cpus, memory), as CreateParams.Quota does. Unset: the use
	// is counted, never refused (what a worker or the watcher observes).
	Quota *QuotaLimits
	// Deliveries are webhook deliveries (OpDeliver items) of this change,
	// written in the same transaction; PrepareOutbox fills in each one's
	// instance and sequence number.
	Deliveries []container.OutboxItem
	// Expiry, if set, makes the write the action of the instance's
	// lifetime reached at that time (rule_expiry.go): it is made only if
	// the stored instance still expires at exactly Expiry and Expiry has
	// passed by the store's clock, else ErrConflict and nothing is
	// written. So a stale timer (the instance was extended or started
	// again since) or a duplicate one acts on nothing.
	Expiry *time.Time
	// Retention, if set, makes the write the delete of an ended instance
	// whose retention ran out at that time (rule_retention.go): made only
	// if the stored instance is still to be deleted at exactly Retention
	// and that time has passed by the store's clock, else ErrConflict.
	Retention *time.Time
	// Restart, if set, makes the write the start of a restart scheduled
	// for that time (rule_restart.go): made only if the stored instance
	// is still running with its restart_at at exactly Restart and that
	// time has passed by the store's clock, else ErrConflict.
	Restart *time.Time
}

// DeleteParams removes an instance.
type DeleteParams struct {
	ID            string
	ExpectVersion int64
	// Event (ContainerDeleted) is appended as the last event; the history
	// stays readable for EventRetention after the delete.
	Event container.Event
	// CompleteOutboxID, if set, marks that outbox item done in the same transaction.
	CompleteOutboxID string
	// Deliveries are webhook deliveries (OpDeliver items) of the removal,
	// written in the same transaction; PrepareOutbox fills in each one with
	// the instance as last stored, numbered to the removal's event.
	Deliveries []container.OutboxItem
}

// ListQuery filters an owner's instances. Empty fields do not filter.
type ListQuery struct {
	// Owner restricts to one owner; empty lists every owner (admin only,
	// enforced by the caller).
	Owner    string
	Statuses []fsm.Status
	Template string
	Group    string
	// Labels must all match exactly.
	Labels map[string]string
	// Limit is 1..100; 0 means 50.
	Limit int
	// Cursor is a NextCursor from an earlier page of the same query.
	Cursor string
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// InstanceStore holds instances and their events.
type InstanceStore interface {
	// CreateInstance writes the instance, its outbox item and its first
	// event, and takes a create admission slot, all or nothing. It returns
	// ErrQueueFull (nothing written) when MaxPending unfinished creates
	// already exist (ErrOwnerQueueFull when MaxPendingPerOwner of the
	// owner's do), ErrAlreadyExists when the ID is taken.
	CreateInstance(ctx context.Context, p CreateParams) (container.Instance, error)

	// Transition changes an instance's status (and optionally other fields)
	// if it is still at ExpectVersion and From, bumping Version by one, and
	// writes the optional outbox item and event with it. Errors:
	// ErrNotFound (no such instance), ErrConflict (version or status moved
	// on; the caller re-reads), fsm.ErrInvalidTransition (the table forbids
	// From → To; nothing is written). Leaving pending or creating releases
	// the instance's create admission slot in the same write.
	Transition(ctx context.Context, p TransitionParams) (container.Instance, error)

	// AppendEvent records an event without changing the instance (used for
	// TransitionRejected). ErrNotFound if the instance does not exist.
	AppendEvent(ctx context.Context, ev container.Event) (container.Event, error)

	// DeleteInstance removes the instance if it is still at ExpectVersion
	// (ErrConflict otherwise, ErrNotFound if gone), appends the final event,
	// releases a held admission slot, and keeps the events readable for
	// EventRetention.
	DeleteInstance(ctx context.Context, p DeleteParams) error

	// GetInstance returns the instance or ErrNotFound.
	GetInstance(ctx context.Context, id string) (container.Instance, error)

	// ListInstances returns instances matching q; with Owner set, in ID
	// order (oldest first). Paging through with NextCursor never repeats or skips an
	// instance that exists for the whole walk, whatever is inserted meanwhile.
	ListInstances(ctx context.Context, q ListQuery) (Page[container.Instance], error)

	// ListActive returns non-terminal instances (every status but stopped
	// and failed) without reading terminal ones, for the reconciler.
	ListActive(ctx context.Context, cursor string, limit int) (Page[container.Instance], error)

	// ListActiveInBucket returns the active instances listed in one
	// fleetshard bucket (NodeBucket: their node's, by runtime kind and
	// runtime_node_name), in ID order, without reading any other: a
	// shard of the reconciler reads its buckets only. An instance is in
	// exactly one bucket while ListActive lists it, moves with the write
	// that places it (sets its node) and leaves with the one that ends or
	// removes it. Paging with NextCursor never repeats or skips an
	// instance that stays in the bucket for the walk. A bucket outside
	// 0..fleetshard.Buckets-1 is ErrInvalidParams; a cursor of another
	// bucket or listing is ErrInvalidCursor.
	ListActiveInBucket(ctx context.Context, bucket int, cursor string, limit int) (Page[container.Instance], error)

	// ListDeadlines returns the instances whose deadline
	// (container.Instance.Deadline: an active one's expires_at, an ended
	// one's delete_at) is at or before until, without reading any other,
	// for the timers and the reconciler. Paging with NextCursor never
	// repeats or skips an instance whose deadline stays put for the walk.
	ListDeadlines(ctx context.Context, until time.Time, cursor string, limit int) (Page[container.Instance], error)

	// ListEvents returns an instance's events oldest first. It works for a
	// live instance and for EventRetention after its deletion; otherwise
	// ErrNotFound.
	ListEvents(ctx context.Context, instanceID, cursor string, limit int) (Page[container.Event], error)
}

// OutboxStore is the bookkeeping of outbox items.
type OutboxStore interface {
	// GetOutbox returns an item or ErrNotFound.
	GetOutbox(ctx context.Context, id string) (container.OutboxItem, error)
	// MarkDispatched records that the item was handed to a queue. Marking a
	// done or failed item is a no-op; ErrNotFound if the item is unknown.
	MarkDispatched(ctx context.Context, id string, at time.Time) error
	// MarkDone records that a worker finished the item (or found it no
	// longer applied); done items expire after OutboxRetention.
	MarkDone(ctx context.Context, id string, at time.Time) error
	// MarkAttempt records a failed attempt: the count and the error. The
	// item stays dispatched and is retried by its queue.
	MarkAttempt(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error
	// MarkFailed records that the item was given up after its last attempt.
	MarkFailed(ctx context.Context, id string, attempts int, lastErr string, at time.Time) error
	// ListUndispatched returns items still pending (never dispatched)
	// created before the given time, oldest first, at most limit.
	ListUndispatched(ctx context.Context, createdBefore time.Time, limit int) ([]container.OutboxItem, error)
}

// AdmissionStore is the create admission counter: the number of instances in
// pending or creating. CreateInstance and Transition keep it exact; these
// methods read and repair it.
type AdmissionStore interface {
	// AdmissionCount returns the counter's value.
	AdmissionCount(ctx context.Context) (int, error)
	// RepairAdmission recomputes the counter from the instances and stores
	// it, returning the old and new values.
	RepairAdmission(ctx context.Context) (before, after int, err error)
}

// TemplateStore holds templates by name.
type TemplateStore interface {
	// PutTemplate creates or replaces a template; created reports which.
	// The stored Version is bumped by one.
	PutTemplate(ctx context.Context, t container.Template) (stored container.Template, created bool, err error)
	// GetTemplate returns a template or ErrNotFound.
	GetTemplate(ctx context.Context, name string) (container.Template, error)
	// ListTemplates returns every template by name.
	ListTemplates(ctx context.Context) ([]container.Template, error)
	// DeleteTemplate removes a template; ErrNotFound if there is none.
	DeleteTemplate(ctx context.Context, name string) error
	// SetImageStatus records the last image check of a template (one
	// entry per host), returned with the template from then on, without
	// changing its Version; ErrNotFound if there is no such template.
	// PutTemplate ignores the caller's ImageStatus and clears the stored
	// one: a new or changed template's image has not been checked.
	SetImageStatus(ctx context.Context, name string, status []container.ImageStatus) error
}

// IdempotencyRecord remembers the first response to an (owner, key) request.
type IdempotencyRecord struct {
	Owner       string `json:"owner"`
	Key         string `json:"key"`
	RequestHash string `json:"request_hash"`
	// Response is the first response as its maker (the HTTP layer)
	// encoded it; the store keeps the bytes and does not read them.
	Response  []byte    `json:"response"`
	CreatedAt time.Time `json:"created_at"`
}

// IdempotencyStore keeps idempotency records for IdempotencyRetention.
type IdempotencyStore interface {
	// PutIdempotency stores rec unless (Owner, Key) already has a live
	// record, in which case it returns that record and ErrAlreadyExists.
	PutIdempotency(ctx context.Context, rec IdempotencyRecord) (IdempotencyRecord, error)
	// GetIdempotency returns the live record or ErrNotFound.
	GetIdempotency(ctx context.Context, owner, key string) (IdempotencyRecord, error)
}
