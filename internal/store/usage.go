package store

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Usage is kept in buckets that the usage rule (rule_usage.go) adds to in
// the transaction of every write that starts or ends a running interval,
// creates an instance or fails one: per subject (an owner, and a team),
// one bucket per UTC hour and one per UTC day of the write's time, and one
// "open" bucket holding what runs now. Each bucket is one document of
// UsageCounters by UsageKey. A query (UsageQuery) reads the buckets from
// its From to now and the open one, never an instance or an event, so its
// cost depends on its span, not on the number of instances.

// The group_by values of a usage query.
const (
	UsageByOwner    = "owner"
	UsageByTeam     = "team"
	UsageByTemplate = "template"
	UsageByDay      = "day"
)

// UsageGroupBys are the accepted UsageQuery.GroupBy values.
var UsageGroupBys = []string{UsageByOwner, UsageByTeam, UsageByTemplate, UsageByDay}

// UsageMaxSpan bounds a usage query: its From is at most this long before
// the store's now, and its To at most this long after its From. It
// bounds the buckets a query reads (a day bucket per day from From to now,
// at most 48 hour buckets).
const UsageMaxSpan = 366 * 24 * time.Hour

// UsageGranularity is the alignment From and To need: usage is exact to
// the second for every window of whole UTC hours (and for one that ends
// at now or later: open intervals count up to now).
const UsageGranularity = time.Hour

// UsageOpenBucket is the name of the bucket of what runs now.
const UsageOpenBucket = "open"

// UsageHourBucket names the bucket of t's UTC hour ("h2026-12-05T08").
func UsageHourBucket(t time.Time) string { return "h" + t.UTC().Format("2006-01-02T15") }

// UsageDayBucket names the bucket of t's UTC day ("d2026-12-05").
func UsageDayBucket(t time.Time) string { return "d" + t.UTC().Format("2006-01-02") }

// UsageKey is what usage is counted by within a subject's bucket: one
// owner's instances of one template, in one team ("" for none).
type UsageKey struct {
	Owner, Team, Template string
}

// String encodes k as a bucket's key (and the stores' attribute names):
// its parts query-escaped, joined by "|", so any owner, team or template
// name round-trips (ParseUsageKey).
func (k UsageKey) String() string {
	return url.QueryEscape(k.Owner) + "|" + url.QueryEscape(k.Team) + "|" + url.QueryEscape(k.Template)
}

// ParseUsageKey reads a UsageKey.String.
func ParseUsageKey(s string) (UsageKey, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 3 {
		return UsageKey{}, fmt.Errorf("usage key %q: want owner|team|template", s)
	}
	var out [3]string
	for i, p := range parts {
		v, err := url.QueryUnescape(p)
		if err != nil {
			return UsageKey{}, fmt.Errorf("usage key %q: %w", s, err)
		}
		out[i] = v
	}
	return UsageKey{Owner: out[0], Team: out[1], Template: out[2]}, nil
}

// UsageCounters are one key's sums in one bucket. Running, CPUMillis and
// MemoryBytes are the net change, over the bucket's writes, of what runs
// (instances, reserved millicores, reserved bytes); the …Sec fields are
// each change times the seconds from its write to the bucket's end (for
// a start, what it runs within the bucket if it runs to the end), so the
// bucket's integral follows from what ran at its start (usage_query.go).
// The open bucket holds only the net changes: what runs now.
type UsageCounters struct {
	Running       int64 `json:"running,omitempty"`
	CPUMillis     int64 `json:"cpu_millis,omitempty"`
	MemoryBytes   int64 `json:"memory_bytes,omitempty"`
	RunningSec    int64 `json:"running_sec,omitempty"`
	CPUMilliSec   int64 `json:"cpu_milli_sec,omitempty"`
	MemoryByteSec int64 `json:"memory_byte_sec,omitempty"`
	Creates       int64 `json:"creates,omitempty"`
	Failures      int64 `json:"failures,omitempty"`
}

// UsageFields name UsageCounters' fields in the order of Fields, for the
// stores that keep one attribute per field.
var UsageFields = []string{"r", "c", "m", "rs", "cs", "ms", "n", "f"}

// Fields returns pointers to c's fields in the order of UsageFields.
func (c *UsageCounters) Fields() []*int64 {
	return []*int64{&c.Running, &c.CPUMillis, &c.MemoryBytes, &c.RunningSec, &c.CPUMilliSec, &c.MemoryByteSec, &c.Creates, &c.Failures}
}

// Add adds d to c.
func (c *UsageCounters) Add(d UsageCounters) {
	dst, src := c.Fields(), d.Fields()
	for i := range dst {
		*dst[i] += *src[i]
	}
}

// IsZero reports whether every field is zero.
func (c UsageCounters) IsZero() bool { return c == UsageCounters{} }

// UsageDoc is one bucket: counters by UsageKey.String.
type UsageDoc map[string]UsageCounters

// UsageQuery asks for one subject's usage from From to To (whole UTC
// hours, To after From, both within UsageMaxSpan), grouped by GroupBy.
type UsageQuery struct {
	Subject  QuotaSubject
	From, To time.Time
	GroupBy  string
}

// UsageParamError is a usage query the store cannot answer: Field (from,
// to, group_by, owner or team) and why. It matches ErrInvalidParams.
type UsageParamError struct {
	Field, Message string
}

func (e *UsageParamError) Error() string { return "usage query: " + e.Field + ": " + e.Message }

// Is makes errors.Is(err, ErrInvalidParams) true.
func (e *UsageParamError) Is(target error) bool { return target == ErrInvalidParams }

// Check returns a *UsageParamError unless q can be answered at now.
func (q UsageQuery) Check(now time.Time) error {
	days := int(UsageMaxSpan.Hours() / 24)
	bad := func(field, format string, args ...any) error {
		return &UsageParamError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case !q.Subject.Valid():
		field := map[string]string{QuotaUser: "owner"}[q.Subject.Kind]
		return bad(cmp.Or(field, "team"), "must name a user or a team")
	case !slices.Contains(UsageGroupBys, q.GroupBy):
		return bad("group_by", "must be one of %s", strings.Join(UsageGroupBys, ", "))
	case !q.From.Equal(q.From.Truncate(UsageGranularity)):
		return bad("from", "must be a whole UTC hour (e.g. 2026-12-01T00:00:00Z): usage is kept by the hour")
	case !q.To.Equal(q.To.Truncate(UsageGranularity)):
		return bad("to", "must be a whole UTC hour (e.g. 2026-12-01T00:00:00Z): usage is kept by the hour")
	case !q.To.After(q.From):
		return bad("to", "must be after from")
	case now.Sub(q.From) > UsageMaxSpan:
		return bad("from", "must be at most %d days ago", days)
	case q.To.Sub(q.From) > UsageMaxSpan:
		return bad("to", "must be at most %d days after from", days)
	}
	return nil
}

// UsageItem is one row of a usage answer: Key is the owner, team,
// template or day (2006-01-02) it sums.
type UsageItem struct {
	Key string
	// RunningSeconds are container-seconds: each instance's seconds in a
	// running interval (rule_usage.go), summed.
	RunningSeconds int64
	// CPUMilliSeconds are the reserved millicores times those seconds.
	CPUMilliSeconds int64
	// Memory is the reserved memory times those seconds.
	Memory  ByteSeconds
	Creates int64
	// Failures are the instance changes to failed.
	Failures int64
}

// IsZero reports whether the row counts nothing.
func (u UsageItem) IsZero() bool {
	return u.RunningSeconds == 0 && u.CPUMilliSeconds == 0 && u.Memory == ByteSeconds{} && u.Creates == 0 && u.Failures == 0
}

// ByteSeconds is an exact amount of byte-seconds too large for an int64:
// whole GiB-seconds and the rest in byte-seconds (0 ≤ Rest < 2^30).
type ByteSeconds struct {
	GiB  int64
	Rest int64
}

const gib = 1 << 30

// Add adds n byte-seconds.
func (b *ByteSeconds) Add(n int64) {
	b.GiB += n / gib
	b.Rest += n % gib
	b.GiB += b.Rest >> 30 // floor, also for a negative rest
	b.Rest &= gib - 1
}

// GiBSeconds returns b in GiB-seconds.
func (b ByteSeconds) GiBSeconds() float64 { return float64(b.GiB) + float64(b.Rest)/gib }

// UsageStore answers usage queries from the buckets the usage rule keeps.
type UsageStore interface {
	// Usage returns q's rows (those that count something), by Key, as of
	// the store's now: a running interval still open counts up to now.
	// Errors wrap ErrInvalidParams when q.Check refuses it.
	Usage(ctx context.Context, q UsageQuery) ([]UsageItem, error)
}
