package container

import "github.com/berth-io/berth/internal/fsm"

// GroupSummary is one group (the instances one owner created with the same
// group) with its members counted by status.
type GroupSummary struct {
	Group  string             `json:"group"`
	Owner  string             `json:"owner"`
	Total  int                `json:"total"`
	Counts map[fsm.Status]int `json:"counts"`
}

// Group is one group with its members, oldest first.
type Group struct {
	GroupSummary
	Members []Instance `json:"members"`
}

// MemberAction is what a group finish or reset did to one member.
type MemberAction struct {
	ID     string     `json:"id"`
	Name   string     `json:"name"`
	Status fsm.Status `json:"status"` // before the action
	Action string     `json:"action"`
}

// Member actions of a finish or reset.
const (
	// ActionCleanupRequested: the policy's stop or delete follows through
	// the outbox once the member is not in another operation.
	ActionCleanupRequested = "cleanup_requested"
	// ActionDeleteRequested: a queued member, deleted before it is created.
	ActionDeleteRequested = "delete_requested"
	// ActionCancelled: a queued member, failed and never created.
	ActionCancelled       = "cancelled"
	ActionAlreadyDeleting = "already_deleting"
	ActionAlreadyStopped  = "already_stopped"
	// ActionNone: the policy is none.
	ActionNone = "none"
)

// GroupResult is the answer to a group finish or reset.
type GroupResult struct {
	Group   string         `json:"group"`
	Owner   string         `json:"owner"`
	Outcome string         `json:"outcome,omitempty"`
	Policy  string         `json:"policy"`
	Members []MemberAction `json:"members"`
}
