package emulate_test

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

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/worker"
)

// check waits for the stack to settle once the faults stopped, then
// asserts what the run promises and logs its figures.
func (r *emuChaos) check(faultsEnded time.Time) {
	t := r.t
	// Everything must converge; the deadline is generous for a loaded
	// machine and above the workers' longest backoff (an operation that met
	// the faults many times over may wait that long for its next try; a
	// message lost to a kill comes back after its visibility timeout, a
	// swept outbox item after outbox_sweep_after), and convergence ends the
	// wait at once.
	var problems []string
	deadline := faultsEnded.Add(worker.DefaultBackoffMax + 2*time.Minute)
	for {
		problems = r.convergence()
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	converged := time.Since(faultsEnded).Round(time.Millisecond)
	for _, p := range problems {
		t.Errorf("not converged %s after the faults stopped: %s", converged, p)
	}
	lost, violations, rejected, histories := r.histories()
	for _, p := range lost {
		t.Errorf("lost: %s", p)
	}
	for _, p := range violations {
		t.Errorf("FSM violation: %s", p)
	}
	for _, p := range r.unexpected {
		t.Errorf("unexpected answer: %s", p)
	}
	dead := r.deadLetters(histories)
	admission, holding := r.admission()
	if admission != holding {
		t.Errorf("admission counter %d, but %d instances are pending or creating", admission, holding)
	}
	figures, ddbRequests := r.aws.figures()
	logs := r.st.logs.String()
	results := invocationResults(logs)
	crashed, invocations := map[string]int{}, 0
	for fn, byResult := range results {
		for res, n := range byResult {
			invocations += n
			if res == emulate.ResultCrash {
				crashed[fn] += n
			}
		}
	}
	d := results["DispatcherFunction"]
	streamRetries := d[emulate.ResultError] + d[emulate.ResultCrash] + d[emulate.ResultTimeout]
	bisections, givenUp := strings.Count(logs, "bisecting a failed batch"), strings.Count(logs, "stream mapping: records given up")
	// A gateway 500 is the answer to a request whose API environment was
	// killed under it: no more of them than API environments killed times
	// the requests one environment serves at once (one).
	if n := r.byClass["gateway 500"]; n > r.kills["ApiFunction"] {
		t.Errorf("%d gateway 500s, but only %d API execution environments were killed", n, r.kills["ApiFunction"])
	}
	orphans, duplicates := 0, 0
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p, "orphan"):
			orphans++
		case strings.Contains(p, " containers"):
			duplicates++
		}
	}
	ddbFaults, sqsDups := 0, figures[sqsDupSend]
	for k, v := range figures {
		if strings.HasPrefix(k, "ddb ") {
			ddbFaults += v
		}
	}
	t.Logf("chaos figures: seed %d; %d operations by 2 users, %d requests (%v); accepted %d instances, %d creates repeated with their key; "+
		"%d invocations, function kills %d %v, invocations crashed %v; stream batches retried %d (bisected %d, given up %d); "+
		"DynamoDB faults %d of %d requests (%d storms), SQS duplicates %d; faults %v; "+
		"containers killed %d, removed %d; engine outages %d; lost %d; orphans %d; duplicate containers %d; FSM violations %d; TransitionRejected %d; "+
		"dead letters %d; converged %s after the faults; admission counter %d (instances holding a slot %d)",
		r.plan.seed, r.plan.ops, r.requests, r.byClass, len(r.accepted), r.replays,
		invocations, r.killedEnvs, r.kills, crashed, streamRetries, bisections, givenUp, ddbFaults, ddbRequests, r.storms, sqsDups, figures,
		r.killed, r.removed, r.outages, len(lost), orphans, duplicates, len(violations), rejected,
		dead, converged, admission, holding)
	t.Logf("answers: %v", r.byStatus)
	if t.Failed() {
		suspects := map[string][]container.Event{}
		for _, p := range append(append(slices.Clone(problems), lost...), violations...) {
			for id, h := range histories {
				if strings.Contains(p, id) {
					suspects[id] = h.events
				}
			}
		}
		logEmuHistories(t, suspects, 12)
		logLinesOf(t, logs, slices.Sorted(maps.Keys(suspects)), 6, 40)
	}
}

// logLinesOf shows, for up to n of the instances, the last lines (up to last) of the
// stack's output that name it (the functions' logs).
func logLinesOf(t interface{ Logf(string, ...any) }, logs string, ids []string, n, last int) {
	lines := strings.Split(logs, "\n")
	for _, id := range ids[:min(n, len(ids))] {
		var of []string
		for _, l := range lines {
			if strings.Contains(l, id) {
				of = append(of, l)
			}
		}
		t.Logf("output naming %s (%d lines, the last %d):\n%s", id, len(of), min(last, len(of)), strings.Join(of[len(of)-min(last, len(of)):], "\n"))
	}
}

// instances lists every instance (as the admin).
func (r *emuChaos) instances() ([]container.Instance, error) {
	var all []container.Instance
	cursor := ""
	for {
		path := "/api/containers?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := r.call(adminToken, http.MethodGet, path, nil, "")
		if err != nil {
			return nil, err
		}
		if a.status != http.StatusOK {
			return nil, fmt.Errorf("listing: %d %s", a.status, a.body)
		}
		var page struct {
			Items      []container.Instance
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(a.body, &page); err != nil {
			return nil, fmt.Errorf("listing: %w", err)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// convergence lists what still differs between berth's view and the
// engine's: unsettled instances, instances whose container disagrees with
// their status, failures without a reason, accepted deletes still there,
// duplicate containers and orphans.
func (r *emuChaos) convergence() []string {
	insts, err := r.instances()
	if err != nil {
		return []string{err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	states, err := r.st.rt.List(ctx)
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
		cs := byInstance[in.ID]
		running := 0
		for _, s := range cs {
			if s.Phase == runtime.PhaseRunning {
				running++
			}
		}
		where := fmt.Sprintf("%s (%s, %s, %q)", in.ID, in.Owner, in.Status, in.StatusReason)
		switch {
		case len(cs) > 1:
			problems = append(problems, fmt.Sprintf("%s has %d containers", where, len(cs)))
		case r.deleted[in.ID]:
			problems = append(problems, fmt.Sprintf("%s: its delete was accepted", where))
		case in.Status != fsm.Running && !in.Status.Terminal():
			problems = append(problems, fmt.Sprintf("%s is not settled", where))
		case in.Status == fsm.Failed && in.StatusReason == "":
			problems = append(problems, fmt.Sprintf("%s: failed without a reason", where))
		case in.Status == fsm.Running && running != 1:
			problems = append(problems, fmt.Sprintf("%s: its container is not running (%v)", where, phases(cs)))
		case in.Status == fsm.Stopped && len(cs) == 0 && r.tampered[in.ID] != "removed":
			problems = append(problems, fmt.Sprintf("%s: its container is gone", where))
		case in.Status.Terminal() && running > 0:
			problems = append(problems, fmt.Sprintf("%s: its container is running", where))
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

func phases(cs []runtime.State) []string {
	out := make([]string, 0, len(cs))
	for _, s := range cs {
		out = append(out, string(s.Phase))
	}
	return out
}

// history is one instance's events and what eventcheck found in them.
type history struct {
	events []container.Event
	found  eventcheck.Findings
	listed bool // the instance still exists
}

// histories reads and checks the history of every instance the run heard
// of: each status change allowed by the FSM and starting where the last
// one ended; every accepted create has a history; an instance that is gone
// has its deletion recorded; every failure says why; no TransitionRejected
// on an instance the test left alone.
func (r *emuChaos) histories() (lost, violations []string, rejected int, hs map[string]history) {
	insts, err := r.instances()
	if err != nil {
		return nil, []string{"listing: " + err.Error()}, 0, nil
	}
	listed := map[string]bool{}
	for _, in := range insts {
		listed[in.ID] = true
	}
	r.mu.Lock()
	ids := slices.Sorted(maps.Keys(r.owners))
	accepted := maps.Clone(r.accepted)
	tampered := maps.Clone(r.tampered)
	r.mu.Unlock()
	hs = map[string]history{}
	for _, id := range ids {
		evs, err := r.events(id)
		if err != nil {
			violations = append(violations, fmt.Sprintf("%s: reading its history: %v", id, err))
			continue
		}
		f := eventcheck.Check(id, evs)
		hs[id] = history{events: evs, found: f, listed: listed[id]}
		violations = append(violations, f.Violations...)
		rejected += len(f.Rejected)
		if tampered[id] == "" {
			for _, ev := range f.Rejected {
				violations = append(violations, fmt.Sprintf("%s #%d: %s: %s", id, ev.Seq, ev.Type, ev.Message))
			}
		}
		switch {
		case len(evs) == 0 && accepted[id] != "":
			lost = append(lost, fmt.Sprintf("%s: accepted (%s), but it has no history", id, accepted[id]))
		case !listed[id] && !f.Deleted:
			lost = append(lost, fmt.Sprintf("%s: gone without a recorded deletion (last status %s)", id, f.Last))
		}
		for _, ev := range f.Failures {
			if strings.TrimSpace(ev.Message) == "" && ev.ExitCode == nil {
				lost = append(lost, fmt.Sprintf("%s #%d %s: %s → failed without a reason", id, ev.Seq, ev.Type, ev.From))
			}
		}
	}
	return lost, violations, rejected, hs
}

// events reads one instance's whole history (as the admin).
func (r *emuChaos) events(id string) ([]container.Event, error) {
	var all []container.Event
	cursor := ""
	for {
		path := "/api/containers/" + id + "/events?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := r.call(adminToken, http.MethodGet, path, nil, "")
		if err != nil {
			return nil, err
		}
		if a.status != http.StatusOK {
			return nil, fmt.Errorf("%d %s", a.status, a.body)
		}
		var page struct {
			Items      []container.Event
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(a.body, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// admission reads the admission counter and counts the instances that hold
// a slot, straight from DynamoDB Local (not through the fault proxy).
func (r *emuChaos) admission() (counter, holding int) {
	t := r.t
	st := dynamostore.New(r.st.ddb, dynamostore.Options{TablePrefix: r.st.params["TablePrefix"]})
	ctx := context.Background()
	counter, err := st.AdmissionCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := store.ListQuery{Limit: 100}
	for {
		page, err := st.ListInstances(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page.Items {
			if in.Status.HoldsCreateSlot() {
				holding++
			}
		}
		if page.NextCursor == "" {
			return counter, holding
		}
		q.Cursor = page.NextCursor
	}
}

// deadLetters reads every dead-letter queue of the stack: each message
// there must be explained by a recorded failure of its instance. It
// returns how many there were.
func (r *emuChaos) deadLetters(hs map[string]history) int {
	model := r.st.model()
	n := 0
	for _, q := range model.Queues {
		if q.DeadLetter == "" {
			continue
		}
		url := r.st.queueURL(model.Queues[q.DeadLetter].Name)
		for _, m := range r.st.receiveAll(url, 1000, 3*time.Second) {
			n++
			var msg struct {
				InstanceID string `json:"instance_id"`
				Op         string `json:"op"`
			}
			body := aws.ToString(m.Body)
			if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.InstanceID == "" {
				r.t.Errorf("dead letter on %s that names no instance: %s", q.DeadLetter, body)
				continue
			}
			h, ok := hs[msg.InstanceID]
			if !ok {
				if evs, err := r.events(msg.InstanceID); err == nil {
					h = history{events: evs, found: eventcheck.Check(msg.InstanceID, evs)}
				}
			}
			if len(h.found.Failures) == 0 {
				r.t.Errorf("dead letter (%s of %s) on %s, but the instance has no recorded failure (last status %q)",
					msg.Op, msg.InstanceID, q.DeadLetter, h.found.Last)
			}
		}
	}
	return n
}

// logEmuHistories shows up to n of the histories behind the failures.
func logEmuHistories(t interface{ Logf(string, ...any) }, hs map[string][]container.Event, n int) {
	ids := slices.Sorted(maps.Keys(hs))
	for _, id := range ids[:min(n, len(ids))] {
		var b strings.Builder
		for _, ev := range hs[id] {
			fmt.Fprintf(&b, "\n  #%d %s %s %s→%s by %s: %s", ev.Seq, ev.At.Format("15:04:05.000"), ev.Type, ev.From, ev.To, ev.Actor, ev.Message)
			if ev.ExitCode != nil {
				fmt.Fprintf(&b, " (exit %d)", *ev.ExitCode)
			}
		}
		t.Logf("history of %s:%s", id, b.String())
	}
}
