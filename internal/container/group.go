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
	// Policies are the cleanup policies berth applies to this group's
	// members, so that a caller can see what a finish or reset will do
	// before asking for it.
	Policies *GroupPolicies `json:"policies,omitempty"`
}

// GroupPolicies are the deployment's group cleanup policies as the API shows
// them (the container section's DAG keys, under their config names).
type GroupPolicies struct {
	DeleteContainerOnNodeSuccess        bool   `json:"delete_container_on_node_success"`
	DAGNodeCleanupOnFailed              string `json:"dag_node_cleanup_on_failed"`
	DAGNodeCleanupOnDAGFinished         string `json:"dag_node_cleanup_on_dag_finished"`
	CleanupDAGNodeContainersBeforeStart bool   `json:"cleanup_dag_node_containers_before_start"`
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
