package container

import (
	"slices"
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// Webhook is a subscription to status changes: each change of an instance
// it matches is delivered to URL, signed with Secret (Standard Webhooks).
// An owner's subscription matches that owner's instances only; an admin's
// (AllOwners) matches every owner's.
type Webhook struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	// AllOwners: made by an admin, it matches every owner's instances.
	AllOwners bool   `json:"all_owners,omitempty"`
	URL       string `json:"url"`
	// Secret is "whsec_" + base64 of the signing key. The store keeps it;
	// the API shows it once, in the answer to the create.
	Secret string `json:"secret"`
	// Filters; empty ones match everything.
	Template string       `json:"template,omitempty"`
	Group    string       `json:"group,omitempty"`
	Statuses []fsm.Status `json:"statuses,omitempty"`
	// CreatedAt is the store's clock at the create.
	CreatedAt time.Time `json:"created_at"`
}

// Matches reports whether a change of inst into status to is one the
// subscription asked for.
func (w Webhook) Matches(inst Instance, to fsm.Status) bool {
	switch {
	case !w.AllOwners && inst.Owner != w.Owner:
		return false
	case w.Template != "" && inst.Template != w.Template:
		return false
	case w.Group != "" && inst.Group != w.Group:
		return false
	case len(w.Statuses) > 0 && !slices.Contains(w.Statuses, to):
		return false
	}
	return true
}

// MatchesGroup reports whether the finish of owner's group is one the
// subscription asked for: the owner's (or an admin's subscription) and the
// group filter's. Template and status filters name what instances are and
// become, which a group finish is neither: a subscription with one does
// not match it.
func (w Webhook) MatchesGroup(owner, group string) bool {
	switch {
	case !w.AllOwners && owner != w.Owner:
		return false
	case w.Group != "" && group != w.Group:
		return false
	case w.Template != "" || len(w.Statuses) > 0:
		return false
	}
	return true
}

// Clone returns a copy that shares no slice with w.
func (w Webhook) Clone() Webhook {
	w.Statuses = slices.Clone(w.Statuses)
	return w
}

// WebhookSet is every subscription of a deployment, kept by the store as
// one document written conditionally on Version: a status change reads
// all of them with one read, and the document stays small (store.MaxWebhooks).
type WebhookSet struct {
	// Version counts writes; 0 means none is stored yet.
	Version int64     `json:"version"`
	Items   []Webhook `json:"items"`
}

// OpDeliver delivers one status change to one webhook subscription. Its
// outbox item (with Delivery set) is written in the same transaction as
// the change it reports.
const OpDeliver Op = "deliver"

// EventBusTarget is the WebhookID of a delivery addressed to the
// deployment's event bus (EventBridge) rather than to a subscription.
// Subscription ids are container.NewID()s, which never take this form.
const EventBusTarget = "event-bus"

// Delivery is what an OpDeliver outbox item reports: one status change of
// one instance, for one subscription.
type Delivery struct {
	WebhookID string     `json:"webhook_id"`
	From      fsm.Status `json:"from"`
	To        fsm.Status `json:"to"`
	Reason    string     `json:"reason,omitempty"`
	// Seq is the sequence number of the change's event (the instance's
	// event_seq after the change): per instance, it orders the changes
	// and tells a duplicate apart. The store sets it.
	Seq int64 `json:"seq"`
	// Instance is the instance as the change left it, as the API shows
	// it; the store sets it.
	Instance *Instance `json:"instance,omitempty"`
	// Group, set on the delivery of a group finish (and then From and To
	// are empty), is the finish as its answer shows it. Its item rides
	// on a member's write (the finish's last), whose instance it names.
	Group *GroupResult `json:"group,omitempty"`
}
