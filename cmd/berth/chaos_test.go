package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/testenv"
)

// Replaying and lengthening the chaos test: the seed decides every user's
// operations and the fault schedule (the interleaving with the server's own
// timing is the machine's), so a failing seed replays the same run.
const (
	envChaosSeed = "BERTH_CHAOS_SEED"
	envChaosOps  = "BERTH_CHAOS_OPS"
)

var chaosLong = flag.Bool("chaos.long", false,
	"TestServeChaos: the long run (2000 operations, more kills, tampering and outages); "+envChaosOps+" still overrides the count; TestServeBindsProperty: 300 random steps instead of 14")

// chaosPlan is one run's size. The default fits CI (well under three
// minutes on two cores); -chaos.long is for `make chaos` or a run by hand.
type chaosPlan struct {
	seed    uint64
	ops     int           // operations over all users
	kills   int           // SIGKILLs of berth serve, each followed by a restart
	tampers int           // containers killed or removed behind berth's back
	outages int           // engine outages
	outage  time.Duration // each outage's length
	// maxAttempts is small so that an outage longer than the retry budget
	// stays short: one retry, after the worker's first backoff of 2 s
	// (±20%), where the default five attempts wait about 30 s.
	maxAttempts int
	budget      time.Duration
}

func chaosPlanFromEnv(t *testing.T) chaosPlan {
	t.Helper()
	p := chaosPlan{ops: 240, kills: 3, tampers: 6, outages: 1, outage: 10 * time.Second, maxAttempts: 2, budget: 2400 * time.Millisecond}
	if *chaosLong {
		p.ops, p.kills, p.tampers, p.outages, p.outage = 2000, 15, 40, 3, 20*time.Second
	}
	p.seed = uint64(time.Now().UnixNano())
	if s := os.Getenv(envChaosSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envChaosSeed, s, err)
		}
		p.seed = v
	}
	if s := os.Getenv(envChaosOps); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive count", envChaosOps, s)
		}
		p.ops = v
	}
	return p
}

// chaosUser is one API user of the run, with the instances it knows of.
type chaosUser struct {
	name, token string
	rng         *rand.Rand
	live        []string        // accepted creates not yet asked to be deleted
	unsure      map[string]bool // deletes sent whose answer a kill swallowed
}

type faultKind int

const (
	faultKill faultKind = iota
	faultTamper
	faultOutage
)

// fault is due once the users have done at op operations.
type fault struct {
	at   int
	kind faultKind
}

// accepted is a request the API answered 202.
type accepted struct {
	op, user, id string
}

// chaosRun is what the users and the fault schedule record.
type chaosRun struct {
	e    *serveEnv
	plan chaosPlan

	mu         sync.Mutex
	cond       *sync.Cond
	done       int // operations finished, over all users
	usersLeft  int
	requests   int
	byClass    map[string]int // "2xx", "4xx", "5xx", "unanswered"
	byStatus   map[string]int // "create 202", …
	unexpected []string       // answers outside an operation's contract
	accepted   []accepted
	owners     map[string]string // instance → owner, every instance the users heard of
	templates  map[string]string // instance → template, where known
	deleted    map[string]bool   // accepted deletes
	tampered   map[string]string // instance → what the test did to its container

	kills, killed, removed int
	outages                []time.Duration
}

// TestServeChaos: several users create, start, stop, delete, wait and list
// on a real `berth serve` and a real Docker engine while the server is
// SIGKILLed and restarted, containers are killed or removed behind its back
// and the engine is unreachable for longer than the retry budget. Once the
// faults stop: no accepted request lost, no orphan, no FSM violation, every
// instance converged with its container, the admission counter exact.
// berth serve runs only on the embedded store (bolt); the DynamoDB store is
// the AWS deployment's and is not reachable through serve.
func TestServeChaos(t *testing.T) {
	t.Parallel()
	plan := chaosPlanFromEnv(t)
	t.Logf("chaos seed %d (replay: %s=%d), %d operations, %d kills, %d tampers, %d outage(s) of %s against a retry budget of %s",
		plan.seed, envChaosSeed, plan.seed, plan.ops, plan.kills, plan.tampers, plan.outages, plan.outage, plan.budget)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run with %s=%d", envChaosSeed, plan.seed)
		}
	})
	proxy := newEngineProxy(t, testenv.DockerHost(t))
	e := newServeEnv(t, serveOptions{
		orphanGrace: 3 * time.Second, reconcileEvery: time.Second,
		maxAttempts: plan.maxAttempts, dockerEndpoint: proxy.endpoint(),
	})
	e.start()
	e.putTemplates()

	rng := rand.New(rand.NewPCG(plan.seed, 0))
	run := &chaosRun{e: e, plan: plan, byClass: map[string]int{}, byStatus: map[string]int{},
		owners: map[string]string{}, templates: map[string]string{}, deleted: map[string]bool{}, tampered: map[string]string{}}
	run.cond = sync.NewCond(&run.mu)
	users := []*chaosUser{{name: "alice", token: aliceToken}, {name: "bob", token: bobToken}, {name: "carol", token: carolToken}}
	for i, u := range users {
		u.rng = rand.New(rand.NewPCG(plan.seed, uint64(i+1)))
		u.unsure = map[string]bool{}
	}
	schedule := faultSchedule(rng, plan)

	began := time.Now()
	run.usersLeft = len(users)
	var wg sync.WaitGroup
	per := plan.ops / len(users)
	for i, u := range users {
		n := per
		if i == 0 {
			n += plan.ops % len(users)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.userLoop(u, n)
		}()
	}
	for _, f := range schedule {
		run.waitProgress(f.at)
		switch f.kind {
		case faultKill:
			e.kill()
			run.mu.Lock()
			run.kills++
			run.mu.Unlock()
			e.start()
		case faultTamper:
			run.tamper(rng)
		case faultOutage:
			proxy.cut()
			cut := time.Now()
			time.Sleep(plan.outage) // the fault is a length of time
			proxy.restore()
			run.mu.Lock()
			run.outages = append(run.outages, time.Since(cut).Round(100*time.Millisecond))
			run.mu.Unlock()
		}
	}
	wg.Wait()
	faultsEnded := time.Now()
	t.Logf("chaos phase: %s", faultsEnded.Sub(began).Round(time.Millisecond))

	// Once faults stop, everything must converge; the deadline is generous
	// for a loaded machine, and convergence ends the wait at once.
	var problems []string
	deadline := faultsEnded.Add(2 * time.Minute)
	for {
		problems = run.convergence()
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	converged := time.Since(faultsEnded).Round(time.Millisecond)
	for _, p := range problems {
		t.Errorf("not converged %s after the faults stopped: %s", converged, p)
	}
	lost, violations, rejected, suspects := run.histories()
	for _, p := range lost {
		t.Errorf("lost: %s", p)
	}
	for _, p := range violations {
		t.Errorf("FSM violation: %s", p)
	}
	for _, p := range run.unexpected {
		t.Errorf("unexpected answer: %s", p)
	}
	orphans, lostCount := 0, len(lost)
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p, "orphan"):
			orphans++
		case strings.HasSuffix(p, "its delete was accepted"), strings.HasSuffix(p, "is not settled"):
			lostCount++
		}
	}
	logs := e.logs.String()
	e.stop()
	admission, holding := admissionAfter(t, e)
	if admission != holding {
		t.Errorf("admission counter %d, but %d instances are pending or creating", admission, holding)
	}
	if run.byClass["5xx"] > 0 {
		t.Errorf("%d answers were 5xx", run.byClass["5xx"])
	}
	if t.Failed() {
		t.Logf("last server log:\n%s", tail(logs, 6000))
		logHistories(t, suspects, 12)
	}
	t.Logf("chaos figures: seed %d; %d operations by %d users, %d requests (%v); %d server kills; %d containers killed, %d removed; "+
		"engine outages %v (budget %s); accepted %d; lost %d; orphans %d; FSM violations %d; TransitionRejected %d; "+
		"converged %s after the faults; admission counter %d (instances holding a slot %d)",
		plan.seed, plan.ops, len(users), run.requests, run.byClass, run.kills, run.killed, run.removed,
		run.outages, plan.budget, len(run.accepted), lostCount, orphans, len(violations), rejected,
		converged, admission, holding)
	t.Logf("answers: %v", run.byStatus)
}

// faultSchedule spreads the plan's faults over the operations (between 5%
// and 90% of them, so that work is in flight at every fault and some
// follows the last one), in order of when they are due.
func faultSchedule(rng *rand.Rand, p chaosPlan) []fault {
	var fs []fault
	at := func() int { return p.ops/20 + rng.IntN(max(1, p.ops*85/100)) }
	for range p.kills {
		fs = append(fs, fault{at: at(), kind: faultKill})
	}
	for range p.tampers {
		fs = append(fs, fault{at: at(), kind: faultTamper})
	}
	for range p.outages {
		fs = append(fs, fault{at: at(), kind: faultOutage})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].at < fs[j].at })
	return fs
}

// waitProgress waits until n operations are done or no user is left.
func (r *chaosRun) waitProgress(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done < n && r.usersLeft > 0 {
		r.cond.Wait()
	}
}

// userLoop runs n operations as u, with a think time between them so that
// the operations span the fault schedule.
func (r *chaosRun) userLoop(u *chaosUser, n int) {
	defer func() {
		r.mu.Lock()
		r.usersLeft--
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
	for range n {
		r.step(u)
		r.mu.Lock()
		r.done++
		r.cond.Broadcast()
		r.mu.Unlock()
		time.Sleep(time.Duration(20+u.rng.IntN(200)) * time.Millisecond) // think time: pacing, not a wait for a result
	}
}

// maxLive bounds a user's undeleted instances, so that the engine's load
// stays that of a few dozen containers.
const maxLive = 8

func (r *chaosRun) step(u *chaosUser) {
	roll := u.rng.IntN(100)
	if len(u.live) == 0 || (roll < 12 && len(u.live) < maxLive) {
		tpl := "sleeper"
		switch x := u.rng.IntN(10); {
		case x == 0:
			tpl = "ok"
		case x == 1:
			tpl = "bad"
		}
		a, ok := r.request(u, "create", "POST", "/api/containers", map[string]string{"template": tpl}, http.StatusAccepted, http.StatusTooManyRequests)
		if ok && a.status == http.StatusAccepted {
			var in container.Instance
			if err := json.Unmarshal(a.body, &in); err != nil || in.ID == "" {
				r.note("create answered 202 without an instance: %s", a.body)
				return
			}
			u.live = append(u.live, in.ID)
			r.accept("create", u.name, in.ID)
			r.mu.Lock()
			r.templates[in.ID] = tpl
			r.mu.Unlock()
		}
		return
	}
	if roll >= 85 {
		r.glance(u, roll)
		return
	}
	id := u.live[u.rng.IntN(len(u.live))]
	p := "/api/containers/" + id
	gone := []int{}
	if u.unsure[id] {
		gone = append(gone, http.StatusNotFound) // its delete's answer was lost to a kill
	}
	a, ok := r.request(u, "get", "GET", p, nil, append(gone, http.StatusOK)...)
	if !ok {
		return
	}
	if a.status == http.StatusNotFound {
		u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == id })
		return
	}
	var in container.Instance
	if err := json.Unmarshal(a.body, &in); err != nil {
		r.note("get %s: %v: %s", id, err, a.body)
		return
	}
	// Mostly what a user would ask of an instance in its status; now and
	// then anything, which the API must refuse cleanly.
	ops := map[fsm.Status][]string{
		fsm.Running: {"stop", "stop", "start", "delete", "wait"}, fsm.Stopped: {"start", "start", "delete"}, fsm.Failed: {"delete"},
		fsm.Pending: {"wait", "delete"}, fsm.Creating: {"wait", "delete"},
	}[in.Status]
	if len(ops) == 0 || u.rng.IntN(5) == 0 {
		ops = []string{"start", "stop", "delete", "wait"}
	}
	op := ops[u.rng.IntN(len(ops))]
	switch op {
	case "start":
		if a, ok := r.request(u, "start", "POST", p+"/start", nil, append(gone, http.StatusAccepted, http.StatusOK, http.StatusConflict)...); ok && a.status == http.StatusAccepted {
			r.accept("start", u.name, id)
		}
	case "stop":
		if a, ok := r.request(u, "stop", "POST", p+"/stop", nil, append(gone, http.StatusAccepted, http.StatusOK, http.StatusConflict)...); ok && a.status == http.StatusAccepted {
			r.accept("stop", u.name, id)
		}
	case "delete":
		a, err := r.e.do("DELETE", p, u.token, nil)
		if err != nil {
			u.unsure[id] = true
		}
		if ok := r.answered(u, "delete", "DELETE", p, a, err, append(gone, http.StatusAccepted, http.StatusConflict)...); ok && a.status == http.StatusAccepted {
			u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == id })
			r.accept("delete", u.name, id)
			r.mu.Lock()
			r.deleted[id] = true
			r.mu.Unlock()
		}
	case "wait":
		want := []fsm.Status{fsm.Running, fsm.Stopped}[u.rng.IntN(2)]
		r.request(u, "wait", "GET", p+"/wait?status="+string(want)+"&timeout=2s", nil,
			append(gone, http.StatusOK, http.StatusRequestTimeout, http.StatusConflict)...)
	}
}

// glance is what a user does without an instance in mind: list its own,
// or look for another user's.
func (r *chaosRun) glance(u *chaosUser, roll int) {
	switch {
	case roll < 95:
		a, ok := r.request(u, "list", "GET", "/api/containers?limit=100", nil, http.StatusOK)
		if !ok {
			return
		}
		var page struct{ Items []container.Instance }
		if err := json.Unmarshal(a.body, &page); err != nil {
			r.note("list: %v: %s", err, a.body)
		}
		for _, in := range page.Items {
			if in.Owner != u.name {
				r.note("%s's list shows %s's instance %s", u.name, in.Owner, in.ID)
			}
		}
	default:
		// Another user's instance is not there for u: 404, never 403.
		r.mu.Lock()
		var others []string
		for id, owner := range r.owners {
			if owner != u.name {
				others = append(others, id)
			}
		}
		r.mu.Unlock()
		oid := ""
		if len(others) > 0 {
			slices.Sort(others)
			oid = others[u.rng.IntN(len(others))]
		}
		if oid != "" {
			r.request(u, "peek", "GET", "/api/containers/"+oid, nil, http.StatusNotFound)
		}
	}
}

// request sends one operation; ok is false when the server did not answer
// (it was being killed) or answered outside want, which is recorded.
func (r *chaosRun) request(u *chaosUser, op, method, path string, body any, want ...int) (apiResp, bool) {
	a, err := r.e.do(method, path, u.token, body)
	return a, r.answered(u, op, method, path, a, err, want...)
}

// answered records one request's answer (or its absence).
func (r *chaosRun) answered(u *chaosUser, op, method, path string, a apiResp, err error, want ...int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.byClass["unanswered"]++
		return false
	}
	r.byClass[fmt.Sprintf("%dxx", a.status/100)]++
	r.byStatus[fmt.Sprintf("%s %d", op, a.status)]++
	if !slices.Contains(want, a.status) {
		r.unexpected = append(r.unexpected, fmt.Sprintf("%s %s %s as %s: %d %s", op, method, path, u.name, a.status, a.body))
		return false
	}
	return true
}

func (r *chaosRun) accept(op, user, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.accepted = append(r.accepted, accepted{op: op, user: user, id: id})
	r.owners[id] = user
}

func (r *chaosRun) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unexpected = append(r.unexpected, fmt.Sprintf(format, args...))
}

// tamper kills or removes (docker kill / docker rm -f, straight to the real
// engine) one running berth container of this run.
func (r *chaosRun) tamper(rng *rand.Rand) {
	e := r.e
	var running []runtime.State
	// A container to hit may take a moment to exist (creates queue behind
	// an outage or a restart); without one by then, the fault is skipped.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		for _, st := range e.containers() {
			if st.Phase == runtime.PhaseRunning && st.InstanceID != "" {
				running = append(running, st)
			}
		}
		if len(running) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(running) == 0 {
		e.t.Logf("tampering skipped: no running container")
		return
	}
	sort.Slice(running, func(i, j int) bool { return running[i].InstanceID < running[j].InstanceID })
	st := running[rng.IntN(len(running))]
	cli := e.engine.Client(st.Node)
	if cli == nil {
		e.t.Fatalf("no engine client for node %q", st.Node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remove := rng.IntN(2) == 0
	var err error
	if remove {
		_, err = cli.ContainerRemove(ctx, st.RuntimeID, client.ContainerRemoveOptions{Force: true})
	} else {
		_, err = cli.ContainerKill(ctx, st.RuntimeID, client.ContainerKillOptions{Signal: "KILL"})
	}
	if err != nil {
		// It may have ended or gone in the meantime: berth's own doing.
		e.t.Logf("tampering with %s: %v", st.InstanceID, err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if remove {
		r.removed++
		r.tampered[st.InstanceID] = "removed"
	} else {
		r.killed++
		if r.tampered[st.InstanceID] == "" {
			r.tampered[st.InstanceID] = "killed"
		}
	}
}

// instances lists every instance (as the admin).
func (r *chaosRun) instances() ([]container.Instance, error) {
	var all []container.Instance
	cursor := ""
	for {
		path := "/api/containers?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := r.e.do("GET", path, adminToken, nil)
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

// settled statuses have nothing in flight.
func settled(s fsm.Status) bool { return s == fsm.Running || s.Terminal() }

// convergence lists what still differs between berth's view and the
// engine's: unsettled instances, instances whose container disagrees with
// their status, accepted deletes still there, and orphans.
func (r *chaosRun) convergence() []string {
	insts, err := r.instances()
	if err != nil {
		return []string{err.Error()}
	}
	byInstance := map[string][]runtime.State{}
	for _, st := range r.e.containers() {
		byInstance[st.InstanceID] = append(byInstance[st.InstanceID], st)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []string
	seen := map[string]bool{}
	for _, in := range insts {
		seen[in.ID] = true
		if _, ok := r.owners[in.ID]; !ok {
			// Created by a request whose answer the kill swallowed.
			r.owners[in.ID] = in.Owner
		}
		r.templates[in.ID] = in.Template
		cs := byInstance[in.ID]
		running := 0
		for _, st := range cs {
			if st.Phase == runtime.PhaseRunning {
				running++
			}
		}
		where := fmt.Sprintf("%s (%s, %s, %q)", in.ID, in.Owner, in.Status, in.StatusReason)
		switch {
		case len(cs) > 1:
			problems = append(problems, fmt.Sprintf("%s has %d containers", where, len(cs)))
		case r.deleted[in.ID]:
			problems = append(problems, fmt.Sprintf("%s: its delete was accepted", where))
		case !settled(in.Status):
			problems = append(problems, fmt.Sprintf("%s is not settled", where))
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
	for _, st := range cs {
		out = append(out, string(st.Phase))
	}
	return out
}

// histories reads every instance's history and checks it: each status
// change is allowed by the FSM and starts where the last one ended; a
// failure is the container's own (a non-zero exit) or the test's doing,
// never berth giving up on an accepted request; no TransitionRejected on an
// instance the test left alone.
func (r *chaosRun) histories() (lost, violations []string, rejected int, suspects map[string][]container.Event) {
	suspects = map[string][]container.Event{}
	r.mu.Lock()
	ids := make([]string, 0, len(r.owners))
	for id := range r.owners {
		ids = append(ids, id)
	}
	tampered := maps.Clone(r.tampered)
	templates := maps.Clone(r.templates)
	r.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		evs, err := r.events(id)
		if err != nil {
			violations = append(violations, fmt.Sprintf("%s: reading its history: %v", id, err))
			continue
		}
		nLost, nViolations := len(lost), len(violations)
		f := eventcheck.Check(id, evs)
		rejected += len(f.Rejected)
		if tampered[id] == "" {
			for _, ev := range f.Rejected {
				violations = append(violations, fmt.Sprintf("%s #%d: %s: %s", id, ev.Seq, ev.Type, ev.Message))
			}
		}
		violations = append(violations, f.Violations...)
		for _, ev := range f.Failures {
			if !failedByItself(templates[id], ev.ExitCode) && tampered[id] == "" {
				lost = append(lost, fmt.Sprintf("%s #%d %s: %s → failed: %s", id, ev.Seq, ev.Type, ev.From, ev.Message))
			}
		}
		if len(lost) > nLost || len(violations) > nViolations {
			suspects[id] = evs
		}
	}
	return lost, violations, rejected, suspects
}

// failedByItself reports whether a failure is the container's own doing:
// the "bad" template exits 3; a template the test never learnt (a create
// whose answer a kill swallowed, deleted since) may be any, so any non-zero
// exit is its own. A sleeper only fails when the test kills or removes its
// container; berth's own stop SIGKILLs it into 137, which must end stopped.
func failedByItself(template string, exit *int) bool {
	switch template {
	case "bad":
		return exit != nil && *exit == 3
	case "":
		return exit != nil && *exit != 0
	}
	return false
}

// events reads one instance's whole history (as the admin).
func (r *chaosRun) events(id string) ([]container.Event, error) {
	var all []container.Event
	cursor := ""
	for {
		path := "/api/containers/" + id + "/events?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := r.e.do("GET", path, adminToken, nil)
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

// admissionAfter opens the stopped server's store and returns its
// admission counter and the number of instances that hold a slot.
func admissionAfter(t *testing.T, e *serveEnv) (counter, holding int) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(e.dir, "data", "berth.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if counter, err = st.AdmissionCount(ctx); err != nil {
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

// logHistories shows up to n of the histories behind the failures.
func logHistories(t *testing.T, hs map[string][]container.Event, n int) {
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
