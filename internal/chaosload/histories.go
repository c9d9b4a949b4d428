package chaosload

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/store"
)

// History is one instance's events and what eventcheck found in them.
type History struct {
	Events []container.Event
	Found  eventcheck.Findings
	Listed bool // the instance still exists
}

// Checked is what Histories found.
type Checked struct {
	// Lost are accepted requests that did not end in their outcome or a
	// failure that says why; Violations the FSM violations, and the
	// TransitionRejected events of instances the test left alone.
	Lost, Violations []string
	// Rejected counts the TransitionRejected events; Expiries and
	// Retentions the actions berth took on reached lifetimes and
	// retentions (Templates.Brief), to show the run raced them.
	Rejected, Expiries, Retentions int
	// Histories are every history read, by instance; Suspects the ids of
	// those behind a lost request or a violation.
	Histories map[string]History
	Suspects  []string
}

// Histories reads and checks the history of every instance the run heard
// of: each status change allowed by the FSM and starting where the last
// one ended; every accepted create has a history; an instance that is gone
// has its deletion recorded; every failure says why (with
// Options.OwnFailuresOnly, is the container's own or follows the test's
// tampering); no TransitionRejected on an instance the test left alone.
func (r *Run) Histories() Checked {
	var c Checked
	insts, err := r.Instances()
	if err != nil {
		c.Violations = []string{err.Error()}
		return c
	}
	listed := map[string]bool{}
	for _, in := range insts {
		listed[in.ID] = true
	}
	r.mu.Lock()
	ids := slices.Sorted(maps.Keys(r.owners))
	accepted, tampered, templates := maps.Clone(r.accepted), maps.Clone(r.tampered), maps.Clone(r.templates)
	r.mu.Unlock()
	c.Histories = map[string]History{}
	for _, id := range ids {
		evs, err := r.Events(id)
		if err != nil {
			c.Violations = append(c.Violations, fmt.Sprintf("%s: reading its history: %v", id, err))
			continue
		}
		nLost, nViolations := len(c.Lost), len(c.Violations)
		f := eventcheck.Check(id, evs)
		c.Histories[id] = History{Events: evs, Found: f, Listed: listed[id]}
		c.Violations = append(c.Violations, f.Violations...)
		c.Violations = append(c.Violations, twiceActed(id, evs)...)
		for _, ev := range evs {
			switch ev.Message {
			case container.ReasonLifetimeReached:
				c.Expiries++
			case container.ReasonRetentionReached:
				c.Retentions++
			}
		}
		c.Rejected += len(f.Rejected)
		if tampered[id] == "" {
			for _, ev := range f.Rejected {
				c.Violations = append(c.Violations, fmt.Sprintf("%s #%d: %s: %s", id, ev.Seq, ev.Type, ev.Message))
			}
		}
		switch {
		case len(evs) == 0 && accepted[id] != "":
			c.Lost = append(c.Lost, fmt.Sprintf("%s: accepted (%s), but it has no history", id, accepted[id]))
		case !listed[id] && !f.Deleted:
			c.Lost = append(c.Lost, fmt.Sprintf("%s: gone without a recorded deletion (last status %s)", id, f.Last))
		}
		for _, ev := range f.Failures {
			switch {
			case strings.TrimSpace(ev.Message) == "" && ev.ExitCode == nil:
				c.Lost = append(c.Lost, fmt.Sprintf("%s #%d %s: %s → failed without a reason", id, ev.Seq, ev.Type, ev.From))
			case r.o.OwnFailuresOnly && tampered[id] == "" && !r.failedByItself(templates[id], ev.ExitCode):
				c.Lost = append(c.Lost, fmt.Sprintf("%s #%d %s: %s → failed: %s", id, ev.Seq, ev.Type, ev.From, ev.Message))
			}
		}
		if len(c.Lost) > nLost || len(c.Violations) > nViolations {
			c.Suspects = append(c.Suspects, id)
		}
	}
	return c
}

// failedByItself reports whether a failure is the container's own doing:
// the Bad template exits BadExit; a template the test never learnt (a
// create whose answer was lost, deleted since) may be any, so any non-zero
// exit is its own. A Long container only fails when the test kills or
// removes it; berth's own stop SIGKILLs it into 137, which must end
// stopped.
func (r *Run) failedByItself(template string, exit *int) bool {
	switch template {
	case r.o.Templates.Bad:
		return exit != nil && *exit == BadExit
	case "":
		return exit != nil && *exit != 0
	}
	return false
}

// AdmissionReader is the part of a store the admission check reads.
type AdmissionReader interface {
	AdmissionCount(ctx context.Context) (int, error)
	ListInstances(ctx context.Context, q store.ListQuery) (store.Page[container.Instance], error)
}

// Admission returns the store's admission counter and the number of
// instances that hold a create slot: once a run has settled they must be
// equal (every slot returned).
func Admission(ctx context.Context, st AdmissionReader) (counter, holding int, err error) {
	if counter, err = st.AdmissionCount(ctx); err != nil {
		return 0, 0, fmt.Errorf("reading the admission counter: %w", err)
	}
	q := store.ListQuery{Limit: 100}
	for {
		page, err := st.ListInstances(ctx, q)
		if err != nil {
			return 0, 0, fmt.Errorf("listing instances: %w", err)
		}
		for _, in := range page.Items {
			if in.Status.HoldsCreateSlot() {
				holding++
			}
		}
		if page.NextCursor == "" {
			return counter, holding, nil
		}
		q.Cursor = page.NextCursor
	}
}

// LogHistories shows, with logf, up to n of the histories of ids.
func (c Checked) LogHistories(logf func(string, ...any), ids []string, n int) {
	ids = slices.Sorted(slices.Values(ids))
	ids = slices.Compact(ids)
	for _, id := range ids[:min(n, len(ids))] {
		var b strings.Builder
		for _, ev := range c.Histories[id].Events {
			fmt.Fprintf(&b, "\n  #%d %s %s %s→%s by %s: %s", ev.Seq, ev.At.Format("15:04:05.000"), ev.Type, ev.From, ev.To, ev.Actor, ev.Message)
			if ev.ExitCode != nil {
				fmt.Fprintf(&b, " (exit %d)", *ev.ExitCode)
			}
		}
		logf("history of %s:%s", id, b.String())
	}
}

// SuspectsWith are the Suspects and the instances the problems name (an
// unsettled instance, a container that disagrees): the histories a failed
// run shows.
func (c Checked) SuspectsWith(problems []string) []string {
	suspects := slices.Clone(c.Suspects)
	for _, p := range problems {
		for id := range c.Histories {
			if strings.Contains(p, id) {
				suspects = append(suspects, id)
			}
		}
	}
	slices.Sort(suspects)
	return slices.Compact(suspects)
}

// LogLinesOf shows, with logf, the last lines (up to last) of logs that
// name each of up to n of ids; a line that repeats the one before but for
// its time (a reconciler saying the same every pass) is counted, not shown.
func LogLinesOf(logf func(string, ...any), logs string, ids []string, n, last int) {
	lines := strings.Split(logs, "\n")
	for _, id := range ids[:min(n, len(ids))] {
		var of []string
		prev, repeats := "", 0
		for _, l := range lines {
			if !strings.Contains(l, id) {
				continue
			}
			if key := logTime.ReplaceAllString(l, ""); key != prev {
				if repeats > 0 {
					of = append(of, fmt.Sprintf("  (the line above %d more times)", repeats))
				}
				of, prev, repeats = append(of, l), key, 0
				continue
			}
			repeats++
		}
		if repeats > 0 {
			of = append(of, fmt.Sprintf("  (the line above %d more times)", repeats))
		}
		logf("output naming %s (%d distinct lines, the last %d):\n%s", id, len(of), min(last, len(of)), strings.Join(of[len(of)-min(last, len(of)):], "\n"))
	}
}

// logTime is a JSON log line's time field.
var logTime = regexp.MustCompile(`"time":"[^"]*"`)

// twiceActed names the deadlines berth acted on twice in one history: two
// "lifetime reached" requests with no start or extension between them
// (each gives a new expiry), or two "retention reached" deletes with no end
// between them (each end gives a new delete_at).
func twiceActed(id string, evs []container.Event) []string {
	var out []string
	expiry, retention := 0, 0
	for _, ev := range evs {
		switch {
		case ev.Message == container.ReasonLifetimeReached:
			if expiry++; expiry > 1 {
				out = append(out, fmt.Sprintf("%s #%d: a second action on one expiry", id, ev.Seq))
			}
		case ev.Message == container.ReasonRetentionReached:
			if retention++; retention > 1 {
				out = append(out, fmt.Sprintf("%s #%d: a second delete for one retention", id, ev.Seq))
			}
		case ev.Type == container.EventStartRequested || ev.Type == container.EventLifetimeExtended:
			expiry = 0
		}
		if ev.To.Terminal() {
			retention = 0
		}
	}
	return out
}
