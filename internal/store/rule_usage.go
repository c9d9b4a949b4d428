package store

import (
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// usageRule keeps the usage buckets (usage.go) exact with no counting
// pass: a create counts a create, a change to failed a failure, and a
// change into or out of a running interval (UsageRuns) adds the run's
// weight (one instance, its template's reserved CPU and memory, as the
// quota rule reads them) to the open bucket and, with the seconds left to
// each bucket's end, to the hour and the day bucket of the write's time
// (whole seconds), for the owner and for the team. Like the quota rule it
// keys off the prior and the new status, which the write is conditional
// on, so a redelivered change adds nothing twice; an instance stored
// before usage existed (not UsageCounted) adds nothing.
type usageRule struct{}

// UsageRuns reports whether an instance in s is in a running interval:
// its container runs (or is paused, holding what it reserves). The
// interval ends when a stop or a delete is asked for, or the instance
// fails.
func UsageRuns(s fsm.Status) bool { return s == fsm.Running || s == fsm.Paused }

func (usageRule) create(w *Write, _ CreateParams) error {
	w.Instance.UsageCounted = true
	addUsage(w, w.Instance, 0, UsageCounters{Creates: 1})
	return nil
}

func (usageRule) transition(w *Write, _ TransitionParams) error {
	w.Instance.UsageCounted = w.Prior.UsageCounted
	if !w.Prior.UsageCounted || w.Prior.Status == w.Instance.Status {
		return nil
	}
	var extra UsageCounters
	if w.Instance.Status == fsm.Failed {
		extra.Failures = 1
	}
	addUsage(w, w.Prior, runDelta(w.Prior.Status, w.Instance.Status), extra)
	return nil
}

func (usageRule) remove(w *Write, _ DeleteParams) error {
	if w.Prior.UsageCounted {
		addUsage(w, w.Prior, runDelta(w.Prior.Status, ""), UsageCounters{})
	}
	return nil
}

// runDelta is +1 when a change starts a running interval, -1 when it ends
// one, else 0.
func runDelta(from, to fsm.Status) int64 {
	switch a, b := UsageRuns(from), UsageRuns(to); {
	case !a && b:
		return 1
	case a && !b:
		return -1
	}
	return 0
}

// addUsage adds to in's owner's and team's buckets the change of what
// runs by delta runs of in, and extra.
func addUsage(w *Write, in container.Instance, delta int64, extra UsageCounters) {
	if delta == 0 && extra.IsZero() {
		return
	}
	cpu, _ := container.ParseCPU(in.Spec.Resources.CPU)
	mem, _ := container.ParseMemory(in.Spec.Resources.Memory)
	change := UsageCounters{Running: delta, CPUMillis: delta * cpu, MemoryBytes: delta * mem}
	at := w.At.Unix()
	key := UsageKey{Owner: in.Owner, Team: in.Team, Template: in.Template}
	subjects := []QuotaSubject{{Kind: QuotaUser, Name: in.Owner}}
	if in.Team != "" {
		subjects = append(subjects, QuotaSubject{Kind: QuotaTeam, Name: in.Team})
	}
	for _, sub := range subjects {
		if delta != 0 {
			w.add(UsageAdd{Subject: sub, Bucket: UsageOpenBucket, Key: key, Delta: change})
		}
		hour := floorTo(at, 3600)
		day := floorTo(at, secondsPerDay)
		w.add(UsageAdd{Subject: sub, Bucket: UsageHourBucket(time.Unix(at, 0)), Key: key, Delta: bucketChange(change, extra, hour+3600-at)})
		w.add(UsageAdd{Subject: sub, Bucket: UsageDayBucket(time.Unix(at, 0)), Key: key, Delta: bucketChange(change, extra, day+secondsPerDay-at)})
	}
}

// bucketChange is change and extra in a bucket that ends left seconds
// after the write.
func bucketChange(change, extra UsageCounters, left int64) UsageCounters {
	c := change
	c.RunningSec, c.CPUMilliSec, c.MemoryByteSec = change.Running*left, change.CPUMillis*left, change.MemoryBytes*left
	c.Creates, c.Failures = extra.Creates, extra.Failures
	return c
}
