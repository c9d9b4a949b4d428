package chaosload

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// Lister lists the containers of the run's scope on the real engine.
type Lister interface {
	List(ctx context.Context) ([]runtime.State, error)
}

// Settled is what Settle found.
type Settled struct {
	// Problems are what still differed at the end (none when it
	// converged): each names its instance and says what is wrong.
	Problems []string
	// After is how long after the faults ended the wait ended.
	After time.Duration
	// Orphans and Duplicates count the problems of those kinds.
	Orphans, Duplicates int
	// Last are the problems seen last before convergence (up to five,
	// latest first, each with when it was last seen after the faults):
	// what held the settle up.
	Last []string
}

// Settle waits, polling every poll, until berth's view and the engine's
// agree (Convergence finds nothing) or within has passed since
// faultsEnded.
func (r *Run) Settle(engine Lister, faultsEnded time.Time, within, poll time.Duration) Settled {
	var problems []string
	lastSeen := map[string]time.Time{}
	deadline := faultsEnded.Add(within)
	for {
		problems = r.Convergence(engine)
		now := time.Now()
		for _, p := range problems {
			lastSeen[p] = now
		}
		if len(problems) == 0 || now.After(deadline) {
			break
		}
		time.Sleep(poll) // polling the API and the engine: there is no signal of convergence
	}
	s := Settled{Problems: problems, After: time.Since(faultsEnded)}
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p, "orphan"):
			s.Orphans++
		case strings.HasSuffix(p, " containers"):
			s.Duplicates++
		}
	}
	slow := slices.SortedFunc(maps.Keys(lastSeen), func(a, b string) int { return lastSeen[b].Compare(lastSeen[a]) })
	for _, p := range slow[:min(5, len(slow))] {
		s.Last = append(s.Last, fmt.Sprintf("last seen %s after the faults: %s", lastSeen[p].Sub(faultsEnded).Round(time.Second), p))
	}
	return s
}

// Convergence lists what still differs between berth's view and the
// engine's: unsettled instances, instances whose container disagrees with
// their status, failures without a reason, accepted deletes still there,
// duplicate containers and orphans.
func (r *Run) Convergence(engine Lister) []string {
	insts, err := r.Instances()
	if err != nil {
		return []string{err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	states, err := engine.List(ctx)
	if err != nil {
		return []string{"listing the engine's containers: " + err.Error()}
	}
	byInstance := map[string][]runtime.State{}
	for _, s := range states {
		byInstance[s.InstanceID] = append(byInstance[s.InstanceID], s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []string
	seen := map[string]bool{}
	for _, in := range insts {
		seen[in.ID] = true
		if _, ok := r.owners[in.ID]; !ok {
			r.owners[in.ID] = in.Owner // created by a request whose answer was lost
		}
		r.templates[in.ID] = in.Template
		cs := byInstance[in.ID]
		running, paused := 0, 0
		for _, s := range cs {
			switch s.Phase {
			case runtime.PhaseRunning:
				running++
			case runtime.PhasePaused:
				paused++
			}
		}
		where := fmt.Sprintf("%s (%s, %s, %q)", in.ID, in.Owner, in.Status, in.StatusReason)
		switch {
		case len(cs) > 1:
			problems = append(problems, fmt.Sprintf("%s has %d containers", where, len(cs)))
		case r.deleted[in.ID]:
			problems = append(problems, fmt.Sprintf("%s: its delete was accepted", where))
		case in.Status != fsm.Running && in.Status != fsm.Paused && !in.Status.Terminal():
			problems = append(problems, fmt.Sprintf("%s is not settled", where))
		case in.Status == fsm.Failed && in.StatusReason == "":
			problems = append(problems, fmt.Sprintf("%s: failed without a reason", where))
		case in.Status == fsm.Running && running != 1:
			problems = append(problems, fmt.Sprintf("%s: its container is not running (%v)", where, phases(cs)))
		case in.Status == fsm.Paused && paused != 1:
			problems = append(problems, fmt.Sprintf("%s: its container is not paused (%v)", where, phases(cs)))
		case in.Status == fsm.Stopped && len(cs) == 0 && r.tampered[in.ID] != "removed":
			problems = append(problems, fmt.Sprintf("%s: its container is gone", where))
		case in.Status.Terminal() && running+paused > 0:
			problems = append(problems, fmt.Sprintf("%s: its container is running", where))
		default:
			problems = append(problems, missedDeadline(in, where)...)
		}
	}
	for id, cs := range byInstance {
		if !seen[id] {
			problems = append(problems, fmt.Sprintf("orphan: container(s) %v of instance %q, which does not exist", phases(cs), id))
		}
	}
	sort.Strings(problems)
	return problems
}

// DeadlineGrace is how long past its deadline (a lifetime's expires_at, a
// retention's delete_at) an instance may still be waiting for berth's
// action before Convergence calls it missed: the bound (5 s), and a
// restart of berth after a kill.
const DeadlineGrace = 20 * time.Second

// missedDeadline names a deadline berth should have acted on by now: a
// running instance past its expires_at, an ended one past its delete_at.
func missedDeadline(in container.Instance, where string) []string {
	switch {
	case (in.Status == fsm.Running || in.Status == fsm.Paused) && in.ExpiresAt != nil && time.Since(*in.ExpiresAt) > DeadlineGrace:
		return []string{fmt.Sprintf("%s: missed expiry: expires_at %s", where, in.ExpiresAt.Format(time.RFC3339Nano))}
	case in.Status.Terminal() && in.DeleteAt != nil && time.Since(*in.DeleteAt) > DeadlineGrace:
		return []string{fmt.Sprintf("%s: missed retention: delete_at %s", where, in.DeleteAt.Format(time.RFC3339Nano))}
	}
	return nil
}

func phases(cs []runtime.State) []string {
	out := make([]string, 0, len(cs))
	for _, s := range cs {
		out = append(out, string(s.Phase))
	}
	return out
}

// Instances lists every instance (as the admin).
func (r *Run) Instances() ([]container.Instance, error) {
	var all []container.Instance
	err := r.pages("/api/containers?limit=100", func(raw []byte) (string, error) {
		var page struct {
			Items      []container.Instance
			NextCursor string `json:"next_cursor"`
		}
		err := json.Unmarshal(raw, &page)
		all = append(all, page.Items...)
		return page.NextCursor, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	return all, nil
}

// Events reads one instance's whole history (as the admin).
func (r *Run) Events(id string) ([]container.Event, error) {
	var all []container.Event
	err := r.pages("/api/containers/"+id+"/events?limit=100", func(raw []byte) (string, error) {
		var page struct {
			Items      []container.Event
			NextCursor string `json:"next_cursor"`
		}
		err := json.Unmarshal(raw, &page)
		all = append(all, page.Items...)
		return page.NextCursor, err
	})
	return all, err
}

// pages reads every page of a listing (as the admin): each answer is
// given to page, which returns the next cursor ("" on the last page).
func (r *Run) pages(path string, page func([]byte) (string, error)) error {
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := r.o.Call(http.MethodGet, p, r.o.AdminToken, nil, "")
		if err != nil {
			return err
		}
		if a.Status != http.StatusOK {
			return fmt.Errorf("%d %s", a.Status, a.Body)
		}
		if cursor, err = page(a.Body); err != nil {
			return err
		}
		if cursor == "" {
			return nil
		}
	}
}
