package store

import "github.com/berth-io/berth/internal/container"

// Part is one piece of a Write a rule adds besides the instance and its
// event. Every backend has one applier per kind of part below, and fails a
// write with a kind it does not know: a new kind needs an applier in each
// backend, a new rule that reuses a kind needs none.
type Part interface{ isPart() }

// NewOutbox puts a new outbox item, prepared (PrepareOutbox); the write
// fails with ErrAlreadyExists when its id is taken.
type NewOutbox struct {
	Item container.OutboxItem
	// Delivery: a webhook delivery of the change rather than the write's
	// own request.
	Delivery bool
}

// CompleteOutbox marks an item done (MarkDone) unless it is done already.
// A missing item was done and has expired: nothing is left to mark, and
// the write goes on without it.
type CompleteOutbox struct{ ID string }

// DispatchOutbox marks a pending item dispatched at the write's time. An
// item in any other state, or a missing one, is left as it is and does not
// fail the write.
type DispatchOutbox struct{ ID string }

// Admission takes (Take) or releases a create admission slot of Owner. A
// take bounded by Limit (> 0) fails the write with ErrQueueFull when Limit
// creates are already in flight, and one bounded by OwnerLimit (> 0) with
// ErrOwnerQueueFull when OwnerLimit of Owner's are; a release never fails
// the write.
type Admission struct {
	Take       bool
	Limit      int
	Owner      string
	OwnerLimit int
}

// SaveIdempotency stores Record with the write; the write fails with
// ErrDuplicateRequest when its (Owner, Key) already has a live record.
type SaveIdempotency struct{ Record IdempotencyRecord }

// TemplateUnchanged conditions the write on the stored template being
// still Template (same TemplateDoc); ErrTemplateChanged otherwise.
type TemplateUnchanged struct{ Template container.Template }

// QuotaReserve adds Delta to Subject's use (negative: releases it). A
// write whose Delta would take a quota above its Limit (> 0) fails with a
// *QuotaError (ErrQuotaExceeded); only the quotas Delta grows are checked,
// so a release never fails the write.
type QuotaReserve struct {
	Subject QuotaSubject
	Delta   container.QuotaUse
	Limit   container.QuotaUse
}

// UsageAdd adds Delta to Key's counters in Subject's usage bucket named
// Bucket (usage.go), creating the bucket if needed; it never fails the
// write.
type UsageAdd struct {
	Subject QuotaSubject
	Bucket  string
	Key     UsageKey
	Delta   UsageCounters
}

func (NewOutbox) isPart()         {}
func (UsageAdd) isPart()          {}
func (QuotaReserve) isPart()      {}
func (CompleteOutbox) isPart()    {}
func (DispatchOutbox) isPart()    {}
func (Admission) isPart()         {}
func (SaveIdempotency) isPart()   {}
func (TemplateUnchanged) isPart() {}
