package container

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// What berth does to an instance when its lifetime is reached
// (Lifetime.OnExpiry).
const (
	ExpiryStop   = "stop"
	ExpiryDelete = "delete"
)

// ReasonLifetimeReached is the status reason (and the event message) of
// the stop or delete berth asks for when an instance's lifetime is reached.
const ReasonLifetimeReached = "lifetime reached"

// Lifetime is a template's bound on the life of its instances: an instance
// lives Default unless its create asks for another lifetime (at most Max),
// may be extended up to Max counted from its create (or its latest start),
// and is then stopped or deleted (OnExpiry). Durations are Go durations
// ("30m", "8h") or whole days ("7d"); empty Default means Max, empty Max
// means no cap, empty OnExpiry means ExpiryStop.
type Lifetime struct {
	Default  string `json:"default,omitempty"`
	Max      string `json:"max,omitempty"`
	OnExpiry string `json:"on_expiry,omitempty"`
}

// IsZero reports whether l sets nothing (the template has no lifetime).
func (l Lifetime) IsZero() bool { return l == Lifetime{} }

// InstanceLifetime is what an instance keeps of the lifetime it was
// created under: what to do at expiry, how long a start makes it live
// (Default), and its cap: MaxExpiresAt, which no extension may pass (nil:
// no cap).
type InstanceLifetime struct {
	OnExpiry     string     `json:"on_expiry"`
	Default      string     `json:"default"`
	Max          string     `json:"max,omitempty"`
	MaxExpiresAt *time.Time `json:"max_expires_at,omitempty"`
}

// Clone returns a deep copy.
func (l *InstanceLifetime) Clone() *InstanceLifetime {
	if l == nil {
		return nil
	}
	out := *l
	if l.MaxExpiresAt != nil {
		v := *l.MaxExpiresAt
		out.MaxExpiresAt = &v
	}
	return &out
}

// ParseDuration reads a lifetime's duration: a Go duration ("90s", "30m",
// "8h") or whole days ("7d"). It must be positive.
func ParseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (a Go duration such as 30m or 8h, or whole days such as 7d)", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration (a Go duration such as 30m or 8h, or whole days such as 7d)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}
