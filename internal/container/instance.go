package container

import (
	"time"

	"github.com/berth-io/berth/internal/fsm"
)

// Instance is one container as berth manages it.
type Instance struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	Template string `json:"template"`
	Group    string `json:"group,omitempty"`
	// Team is the owner's team when the instance was created: its use
	// counts toward that team's quota as long as it lasts.
	Team            string            `json:"team,omitempty"`
	Labels          map[string]string `json:"labels"`
	Runtime         string            `json:"runtime"`
	Image           string            `json:"image"`
	Status          fsm.Status        `json:"status"`
	StatusReason    string            `json:"status_reason,omitempty"`
	ExitCode        *int              `json:"exit_code,omitempty"`
	RuntimeID       string            `json:"runtime_id,omitempty"`
	RuntimeNodeName string            `json:"runtime_node_name,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	StartedAt       *time.Time        `json:"started_at,omitempty"`
	FinishedAt      *time.Time        `json:"finished_at,omitempty"`
	// Endpoints are where the container's published ports answer, while
	// it runs (see Endpoint); none in any other status.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// ExpiresAt is when berth stops or deletes the instance (its
	// Lifetime's OnExpiry); nil when it lives until someone stops it.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Lifetime is the lifetime the instance lives under; nil for none.
	Lifetime *InstanceLifetime `json:"lifetime,omitempty"`
	// DeleteAt is when berth deletes the instance, ended (stopped or
	// failed) since, under its Retention; nil while it is active or kept.
	// Set by the store with each change of status.
	DeleteAt *time.Time `json:"delete_at,omitempty"`
	// Retention is how long the instance is kept once it has ended; nil:
	// until someone deletes it.
	Retention *Retention `json:"retention,omitempty"`
	// Restart is the restart policy the instance lives under; nil: none.
	Restart *Restart `json:"restart,omitempty"`
	// Restarts counts berth's restarts of the container since the last
	// start a user asked for (or the create); LastExit is the exit code
	// that brought the latest.
	Restarts int  `json:"restarts,omitempty"`
	LastExit *int `json:"last_exit,omitempty"`
	// RestartAt is when berth asks for the start of a restart its policy
	// scheduled: set with the exit it answers, while the instance stays
	// running (its container ended); cleared by any change of status (a
	// user's stop or delete, an expiry, the restart's own start).
	RestartAt *time.Time `json:"restart_at,omitempty"`
	// Version increases by one with every committed change; it is the ETag.
	Version int64 `json:"version"`

	// Spec is stored with the instance and never shown: it may carry secrets.
	Spec Spec `json:"-"`
	// EventSeq is the seq of the instance's newest event; stores use it to
	// number events without gaps or repeats.
	EventSeq int64 `json:"-"`
	// QuotaCounted: the store counts the instance's use in its owner's
	// and team's quota use (set by the store's quota rule at create;
	// instances stored before quotas existed are never counted, so
	// releasing them cannot take a use below zero).
	QuotaCounted bool `json:"-"`
	// UsageCounted: the store records the instance's usage (running time,
	// creates, failures) in its owner's and team's usage buckets (set by
	// the store's usage rule at create; instances stored before usage
	// existed are never counted, so their stop cannot end an interval
	// that was never started).
	UsageCounted bool `json:"-"`
}

// Clone returns a deep copy, so a caller may change it freely.
func (in Instance) Clone() Instance {
	out := in
	out.Labels = cloneMap(in.Labels)
	if in.ExitCode != nil {
		v := *in.ExitCode
		out.ExitCode = &v
	}
	if in.StartedAt != nil {
		v := *in.StartedAt
		out.StartedAt = &v
	}
	if in.FinishedAt != nil {
		v := *in.FinishedAt
		out.FinishedAt = &v
	}
	out.Endpoints = append([]Endpoint(nil), in.Endpoints...)
	if in.ExpiresAt != nil {
		v := *in.ExpiresAt
		out.ExpiresAt = &v
	}
	out.Lifetime = in.Lifetime.Clone()
	if in.DeleteAt != nil {
		v := *in.DeleteAt
		out.DeleteAt = &v
	}
	out.Retention = in.Retention.Clone()
	out.Restart = in.Restart.Clone()
	if in.LastExit != nil {
		v := *in.LastExit
		out.LastExit = &v
	}
	if in.RestartAt != nil {
		v := *in.RestartAt
		out.RestartAt = &v
	}
	out.Spec = in.Spec.Clone()
	return out
}

// Clone returns a deep copy.
func (s Spec) Clone() Spec {
	out := s
	out.Command = append([]string(nil), s.Command...)
	out.Args = append([]string(nil), s.Args...)
	out.Env = cloneMap(s.Env)
	out.SecretEnv = cloneMap(s.SecretEnv)
	out.Volumes = append([]Volume(nil), s.Volumes...)
	out.Ports = append([]Port(nil), s.Ports...)
	out.Labels = cloneMap(s.Labels)
	out.Scheduling.HostLabels = cloneMap(s.Scheduling.HostLabels)
	out.Scheduling.NodeSelector = cloneMap(s.Scheduling.NodeSelector)
	out.Scheduling.Tolerations = append([]Toleration(nil), s.Scheduling.Tolerations...)
	out.Scheduling.Constraints = append([]Constraint(nil), s.Scheduling.Constraints...)
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
