package store

import (
	"context"
	"maps"
	"slices"
	"time"
)

// UsageReader reads the named buckets of sub, as both stores keep them; a
// bucket never written may be missing from the answer.
type UsageReader func(ctx context.Context, sub QuotaSubject, buckets []string) (map[string]UsageDoc, error)

// AnswerUsage checks q and answers it at now from the buckets read: the
// backends' Usage. The integral of what ran over a bucket [s, e), up to
// u = min(e, now), is what ran at s times (u − s), plus each change times
// the seconds from it to u (the bucket's …Sec minus its net change times
// e − u). What ran at a bucket's start is what ran at its end less its net
// change, and what runs now is the open bucket: so the walk goes back
// from now, day by day, and by hours within a day the window covers only
// in part.
func AnswerUsage(ctx context.Context, q UsageQuery, now time.Time, read UsageReader) ([]UsageItem, error) {
	if err := q.Check(now); err != nil {
		return nil, err
	}
	docs, err := read(ctx, q.Subject, UsageBuckets(q, now))
	if err != nil {
		return nil, err
	}
	return sumUsage(q, now, docs), nil
}

const secondsPerDay = 24 * 60 * 60

// usageDay is one UTC day a query walks: its start (Unix seconds), and
// whether the window holds all of it (whole) or part of it (partial).
type usageDay struct {
	start          int64
	whole, partial bool
}

// usageDays are the days from now's back to q.From's, newest first.
func usageDays(q UsageQuery, now time.Time) []usageDay {
	from, to := q.From.Unix(), q.To.Unix()
	var out []usageDay
	for ds := floorTo(now.Unix(), secondsPerDay); ds+secondsPerDay > from; ds -= secondsPerDay {
		de := ds + secondsPerDay
		whole := ds >= from && de <= to
		out = append(out, usageDay{start: ds, whole: whole, partial: !whole && ds < to && de > from})
	}
	return out
}

// UsageBuckets names the buckets q needs at now: the open one, one per day
// of usageDays, and the hours before now of the days the window covers in
// part (at most two).
func UsageBuckets(q UsageQuery, now time.Time) []string {
	out := []string{UsageOpenBucket}
	for _, d := range usageDays(q, now) {
		out = append(out, UsageDayBucket(time.Unix(d.start, 0)))
		for hs := d.start; d.partial && hs < d.start+secondsPerDay && hs < now.Unix(); hs += 3600 {
			out = append(out, UsageHourBucket(time.Unix(hs, 0)))
		}
	}
	return out
}

// runWeight is what runs of one key: instances, millicores, bytes.
type runWeight struct{ n, cpu, mem int64 }

func (w runWeight) less(c UsageCounters) runWeight {
	return runWeight{w.n - c.Running, w.cpu - c.CPUMillis, w.mem - c.MemoryBytes}
}

// sumUsage walks the buckets back from now (see AnswerUsage).
func sumUsage(q UsageQuery, now time.Time, docs map[string]UsageDoc) []UsageItem {
	rows := map[string]*UsageItem{}
	running := map[string]runWeight{}
	for k, c := range docs[UsageOpenBucket] {
		running[k] = runWeight{c.Running, c.CPUMillis, c.MemoryBytes}
	}
	from, to, nowS := q.From.Unix(), q.To.Unix(), now.Unix()
	for _, d := range usageDays(q, now) {
		day := time.Unix(d.start, 0).UTC()
		doc := docs[UsageDayBucket(day)]
		if d.partial {
			hours := maps.Clone(running)
			for hs := d.start + secondsPerDay - 3600; hs >= d.start; hs -= 3600 {
				counted := hs >= from && hs+3600 <= to && hs < nowS
				walkBucket(q, rows, hours, docs[UsageHourBucket(time.Unix(hs, 0))], day, hs, hs+3600, nowS, counted)
			}
		}
		walkBucket(q, rows, running, doc, day, d.start, d.start+secondsPerDay, nowS, d.whole)
	}
	out := make([]UsageItem, 0, len(rows))
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		if !rows[k].IsZero() {
			out = append(out, *rows[k])
		}
	}
	return out
}

// walkBucket moves running from bucket [s, e)'s end back to its start and,
// if counted, adds the bucket's usage up to min(e, now) to rows.
func walkBucket(q UsageQuery, rows map[string]*UsageItem, running map[string]runWeight, doc UsageDoc, day time.Time, s, e, now int64, counted bool) {
	keys := map[string]bool{}
	for k := range running {
		keys[k] = true
	}
	for k := range doc {
		keys[k] = true
	}
	u := min(e, now)
	for k := range keys {
		c := doc[k]
		start := running[k].less(c)
		running[k] = start
		if !counted || u <= s {
			continue
		}
		row := usageRow(q, rows, k, day)
		row.RunningSeconds += start.n*(u-s) + c.RunningSec - c.Running*(e-u)
		row.CPUMilliSeconds += start.cpu*(u-s) + c.CPUMilliSec - c.CPUMillis*(e-u)
		row.Memory.Add(start.mem * (u - s))
		row.Memory.Add(c.MemoryByteSec - c.MemoryBytes*(e-u))
		row.Creates += c.Creates
		row.Failures += c.Failures
	}
}

// usageRow is the row key k of day counts toward in q's grouping.
func usageRow(q UsageQuery, rows map[string]*UsageItem, k string, day time.Time) *UsageItem {
	key, _ := ParseUsageKey(k) // a key no store wrote counts toward ""
	var name string
	switch q.GroupBy {
	case UsageByOwner:
		name = key.Owner
	case UsageByTeam:
		name = key.Team
	case UsageByTemplate:
		name = key.Template
	default:
		name = day.Format(time.DateOnly)
	}
	row, ok := rows[name]
	if !ok {
		row = &UsageItem{Key: name}
		rows[name] = row
	}
	return row
}

// floorTo rounds t down to a multiple of unit (t ≥ 0).
func floorTo(t, unit int64) int64 { return t - t%unit }
