package httpapi

import (
	"regexp"
	"time"

	"github.com/berth-io/berth/internal/manager"
)

// The bounds of a logs since=, the one rule both berth serve and the logs
// function apply. Out of them a since is refused (422) before any runtime
// is asked: Docker counts log times in Unix seconds and fails on a
// negative one, which the caller would otherwise see as the runtime not
// answering (503, retry later).
var (
	// sinceEarliest is the earliest since accepted: the Unix epoch.
	sinceEarliest = time.Unix(0, 0).UTC()
	// sinceAheadMax is how far past the server's clock a since may be: a
	// client's clock may run ahead a little; a later since asks for lines
	// not written yet.
	sinceAheadMax = 24 * time.Hour
)

// sinceMessage states the rule in each refusal.
const sinceMessage = "must be an RFC 3339 time from 1970-01-01T00:00:00Z to a day from now, or a positive duration (10m, 1h30m) reaching back no further"

// goDuration is the syntax of time.ParseDuration, so that a duration it
// refuses for overflowing is told apart from one that is malformed.
var goDuration = regexp.MustCompile(`^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$`)

// parseSince reads since=: an RFC 3339 time, or a positive duration back
// from now. A value that is neither is a bad request (400); a time or
// duration outside the bounds (sinceEarliest, sinceAheadMax; a duration
// that is not positive or overflows) is a ValidationError (422).
func parseSince(v string, now time.Time) (time.Time, error) {
	outOfRange := &manager.ValidationError{Fields: fieldErr("since", sinceMessage)}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		if t.Before(sinceEarliest) || t.After(now.Add(sinceAheadMax)) {
			return time.Time{}, outOfRange
		}
		return t, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil && goDuration.MatchString(v):
		return time.Time{}, outOfRange // well-formed, past time.Duration's 292 years
	case err != nil:
		return time.Time{}, &badRequest{msg: "since: " + sinceMessage, fields: fieldErr("since", sinceMessage)}
	case d <= 0 || now.Add(-d).Before(sinceEarliest):
		return time.Time{}, outOfRange
	}
	return now.Add(-d), nil
}
