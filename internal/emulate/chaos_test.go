package emulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Replaying and lengthening the chaos run, as TestServeChaos's: the seed
// decides every user's operations and the fault schedule (the
// interleaving with the stack's own timing is the machine's).
const (
	envChaosSeed = "BERTH_CHAOS_SEED"
	envChaosOps  = "BERTH_CHAOS_OPS"
)

var chaosLong = flag.Bool("chaos.long", false,
	"TestEmulateChaos: the long run (1600 operations, more function kills and tampering); "+envChaosOps+" still overrides the count")

// emuChaosPlan is one run's size. The default fits CI (about a minute
// once the functions are built); -chaos.long is for `make chaos`.
type emuChaosPlan struct {
	seed    uint64
	ops     int // operations over all users
	kills   int // SIGKILLs of a function's execution environment
	tampers int // containers killed or removed behind berth's back
	storms  int // DynamoDB fault storms (stormRate for storm)
	storm   time.Duration
	outages int // Docker engine cut off (for outage)
	outage  time.Duration
	// ddbRate is the share of DynamoDB requests that meet a fault while
	// the faults are on; dupRate the share of SQS sends delivered twice;
	// lostDeleteRate the share of SQS deletes lost.
	ddbRate, dupRate, lostDeleteRate float64
	// visibility replaces the queues' visibility timeout: short, so that a
	// message comes again while a slow first consumer still works on it.
	visibility time.Duration
}

func emuChaosPlanFromEnv(t *testing.T) emuChaosPlan {
	t.Helper()
	p := emuChaosPlan{ops: 120, kills: 4, tampers: 3, storms: 1, storm: 3 * time.Second, outages: 1, outage: 5 * time.Second, ddbRate: 0.04, dupRate: 0.2, lostDeleteRate: 0.05, visibility: 6 * time.Second}
	if *chaosLong {
		p.ops, p.kills, p.tampers, p.storms, p.outages, p.outage = 1600, 30, 30, 12, 4, 10*time.Second
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

// killable are the functions whose execution environments the run kills,
// with their weights: the API and the workers most, as they are the busiest.
var killable = []struct {
	fn     string
	weight int
}{{"ApiFunction", 3}, {"DispatcherFunction", 2}, {"CreateWorkerFunction", 3}, {"LifecycleWorkerFunction", 2}, {"ReconcilerFunction", 1}}

// emuUser is one API user of the run with what it knows.
type emuUser struct {
	name, token string
	rng         *rand.Rand
	n           int             // requests' idempotency keys
	live        []string        // instances not asked to be deleted
	member      map[string]bool // instances in a group (a reset or a newer member may delete them)
	unsure      map[string]bool // deletes whose answer was lost
	lastCreate  *createCall     // the last accepted create, to repeat
}

// createCall is one create as sent, to repeat with its Idempotency-Key.
type createCall struct {
	key  string
	body map[string]any
	id   string
}

// emuChaos is what the users and the fault schedule record.
type emuChaos struct {
	t    *testing.T
	st   *stack
	plan emuChaosPlan
	aws  *chaosAWS

	mu         sync.Mutex
	cond       *sync.Cond
	done       int
	usersLeft  int
	requests   int
	byClass    map[string]int // 2xx, 4xx, 503, gateway 500, unanswered …
	byStatus   map[string]int // "create 202" …
	unexpected []string
	accepted   map[string]string // instance → the op that first made it known
	owners     map[string]string // instance → owner
	deleted    map[string]bool   // instances whose deletion was accepted (delete, group reset)
	tampered   map[string]string // instance → "killed" or "removed"
	replays    int               // creates repeated with their key, answered with the same instance
	kills      map[string]int    // by function
	killedEnvs int               // execution environments killed (an RIE with its bootstrap)
	killed     int               // containers killed
	removed    int               // containers removed
	storms     int               // DynamoDB fault storms
	outages    int               // Docker engine outages
}

// TestEmulateChaos: users drive the emulated AWS stack's front door with a
// mixed workload (creates, group members, starts, stops, deletes, group
// finish and reset, repeated creates with their Idempotency-Key) while,
// outside berth's code, function execution environments are SIGKILLed,
// DynamoDB answers throttling errors and 500s, is slow, or loses answers,
// SQS delivers messages twice, late and loses deletes (with a short
// visibility timeout), the Docker engine is cut off for a while, and
// containers are killed or removed on the engine. Once the
// faults stop and the stack settles: no accepted request lost, no FSM
// violation, no orphan or duplicate container, the admission counter
// exact, the dead-letter queues explained, no 5xx but honest ones.
func TestEmulateChaos(t *testing.T) {
	plan := emuChaosPlanFromEnv(t)
	t.Logf("chaos seed %d (replay: %s=%d), %d operations, %d function kills, %d tampers, DynamoDB faults on %.0f%% of requests "+
		"(%d storms of %s at %.0f%%), %d engine outages of %s, "+
		"SQS duplicates on %.0f%% of sends, lost deletes %.0f%%, visibility %s",
		plan.seed, envChaosSeed, plan.seed, plan.ops, plan.kills, plan.tampers, plan.ddbRate*100, plan.storms, plan.storm, stormRate*100, plan.outages, plan.outage, plan.dupRate*100, plan.lostDeleteRate*100, plan.visibility)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run with %s=%d", envChaosSeed, plan.seed)
		}
	})
	faults := newChaosAWS(plan.seed, plan.ddbRate, plan.dupRate, plan.lostDeleteRate)
	engine := newEngineCut(t)
	st := start(t, setup{
		aws: faults.wrap(t), dockerEndpoint: engine.endpoint, visibility: plan.visibility, scheduleEvery: 2 * time.Second,
		container: map[string]any{
			"cleanup_dag_node_containers_before_start": true, "dag_node_cleanup_on_dag_finished": "stop",
			"outbox_sweep_after": "5s",
		},
	})
	st.putTemplate("quick", []string{"sh", "-c", "sleep 1; exit 0"})
	st.putTemplate("bad", []string{"sh", "-c", "sleep 1; exit 3"})

	run := &emuChaos{t: t, st: st, plan: plan, aws: faults, byClass: map[string]int{}, byStatus: map[string]int{},
		accepted: map[string]string{}, owners: map[string]string{}, deleted: map[string]bool{}, tampered: map[string]string{}, kills: map[string]int{}}
	run.cond = sync.NewCond(&run.mu)
	users := []*emuUser{{name: "alice", token: aliceToken}, {name: "bob", token: bobToken}}
	for i, u := range users {
		u.rng = rand.New(rand.NewPCG(plan.seed, uint64(i+1)))
		u.member, u.unsure = map[string]bool{}, map[string]bool{}
	}
	rng := rand.New(rand.NewPCG(plan.seed, 0))
	schedule := emuFaultSchedule(rng, plan)

	began := time.Now()
	faults.setOn(true)
	run.usersLeft = len(users)
	var wg sync.WaitGroup
	per := plan.ops / len(users)
	for i, u := range users {
		n := per
		if i == 0 {
			n += plan.ops % len(users)
		}
		wg.Go(func() { run.userLoop(u, n) })
	}
	for _, f := range schedule {
		run.waitProgress(f.at)
		switch f.kind {
		case faultKill:
			run.killFunction(rng)
		case faultTamper:
			run.tamper(rng)
		case faultStorm:
			faults.setStorm(true)
			time.Sleep(plan.storm) // the fault is a length of time
			faults.setStorm(false)
			run.mu.Lock()
			run.storms++
			run.mu.Unlock()
		case faultOutage:
			engine.setCut(true)
			time.Sleep(plan.outage) // the fault is a length of time
			engine.setCut(false)
			run.mu.Lock()
			run.outages++
			run.mu.Unlock()
		}
	}
	wg.Wait()
	faults.setOn(false)
	faultsEnded := time.Now()
	t.Logf("chaos phase: %s", faultsEnded.Sub(began).Round(time.Millisecond))

	run.check(faultsEnded)
	// The run leaves dozens of containers: they are removed here, side by
	// side and with a loaded engine's time, rather than one by one by the
	// harness's cleanup, whose budget is that of a test with a few.
	st.stop()
	removeContainers(t, st)
}

// removeContainers removes every container of the stack's scope.
func removeContainers(t *testing.T, st *stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	states, err := st.rt.List(ctx)
	if err != nil {
		t.Errorf("removing the run's containers: %v", err)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, s := range states {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := st.rt.Delete(ctx, s.Ref); err != nil {
				t.Errorf("removing the run's container %s: %v", s.Name, err)
			}
		})
	}
	wg.Wait()
}

type emuFaultKind int

const (
	faultKill emuFaultKind = iota
	faultTamper
	faultStorm
	faultOutage
)

type emuFault struct {
	at   int
	kind emuFaultKind
}

// emuFaultSchedule spreads the faults over the operations (between 5% and
// 90% of them), in order of when they are due.
func emuFaultSchedule(rng *rand.Rand, p emuChaosPlan) []emuFault {
	var fs []emuFault
	at := func() int { return p.ops/20 + rng.IntN(max(1, p.ops*85/100)) }
	for range p.kills {
		fs = append(fs, emuFault{at: at(), kind: faultKill})
	}
	for range p.tampers {
		fs = append(fs, emuFault{at: at(), kind: faultTamper})
	}
	for range p.storms {
		fs = append(fs, emuFault{at: at(), kind: faultStorm})
	}
	for range p.outages {
		fs = append(fs, emuFault{at: at(), kind: faultOutage})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].at < fs[j].at })
	return fs
}

func (r *emuChaos) waitProgress(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done < n && r.usersLeft > 0 {
		r.cond.Wait()
	}
}

func (r *emuChaos) userLoop(u *emuUser, n int) {
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
		time.Sleep(time.Duration(50+u.rng.IntN(250)) * time.Millisecond) // think time: pacing, not a wait for a result
	}
}

// maxLive bounds a user's undeleted instances, so that the engine's load
// stays that of a few dozen containers.
const maxLive = 10

func (r *emuChaos) step(u *emuUser) {
	roll := u.rng.IntN(100)
	switch {
	case len(u.live) == 0 || (roll < 14 && len(u.live) < maxLive):
		tpl := []string{"busybox", "busybox", "busybox", "busybox", "busybox", "busybox", "busybox", "busybox", "quick", "bad"}[u.rng.IntN(10)]
		r.create(u, map[string]any{"template": tpl})
	case roll < 26 && len(u.live) < maxLive:
		// A member of one of the user's groups; a newer member of the same
		// name deletes the older ones.
		g := fmt.Sprintf("%s-dag%d", u.name, u.rng.IntN(2))
		r.create(u, map[string]any{"template": "busybox", "group": g, "name": []string{"node-a", "node-b", "node-c"}[u.rng.IntN(3)]})
	case roll < 30 && u.lastCreate != nil:
		r.replay(u)
	case roll < 34:
		r.groupOp(u, "finish")
	case roll < 37:
		r.groupOp(u, "reset")
	case roll >= 88:
		r.glance(u)
	default:
		r.instanceOp(u)
	}
}

// create sends a create with a new Idempotency-Key, and sends it again
// with the same key while the answer is a fault's (a 5xx or none), as a
// client that keeps its promise of a single instance does.
func (r *emuChaos) create(u *emuUser, body map[string]any) {
	u.n++
	c := &createCall{key: fmt.Sprintf("%s-%d-%d", u.name, r.plan.seed%1000000, u.n), body: body}
	for attempt := 0; attempt < 8; attempt++ {
		a, err := r.call(u.token, http.MethodPost, "/api/containers", body, c.key)
		ok := r.answered(u, "create", a, err, http.StatusAccepted, http.StatusTooManyRequests)
		if ok && a.status == http.StatusAccepted {
			var in container.Instance
			if err := json.Unmarshal(a.body, &in); err != nil || in.ID == "" {
				r.note("create answered 202 without an instance: %s", a.body)
				return
			}
			c.id = in.ID
			u.lastCreate = c
			u.live = append(u.live, in.ID)
			if body["group"] != nil {
				u.member[in.ID] = true
			}
			r.accept("create", u.name, in.ID)
			return
		}
		if ok || (err == nil && a.status < 500) {
			return // an answer: 429 (the queue is full) or one outside the contract, recorded
		}
		time.Sleep(time.Duration(200+u.rng.IntN(300)) * time.Millisecond)
	}
}

// replay repeats the last accepted create with its key and body: the same
// instance, whatever happened to it since (while the key is remembered).
func (r *emuChaos) replay(u *emuUser) {
	c := u.lastCreate
	a, err := r.call(u.token, http.MethodPost, "/api/containers", c.body, c.key)
	if !r.answered(u, "replay", a, err, http.StatusAccepted) {
		return
	}
	var in container.Instance
	if err := json.Unmarshal(a.body, &in); err != nil || in.ID != c.id {
		r.note("create repeated with key %s: instance %q, want %s (%s)", c.key, in.ID, c.id, a.body)
		return
	}
	r.mu.Lock()
	r.replays++
	r.mu.Unlock()
}

// groupOp finishes or resets one of the user's groups.
func (r *emuChaos) groupOp(u *emuUser, op string) {
	g := fmt.Sprintf("%s-dag%d", u.name, u.rng.IntN(2))
	var body any
	if op == "finish" {
		body = map[string]string{"outcome": []string{"succeeded", "failed", "cancelled"}[u.rng.IntN(3)]}
	}
	a, err := r.call(u.token, http.MethodPost, "/api/groups/"+g+"/"+op, body, "")
	if !r.answered(u, op, a, err, http.StatusAccepted) || a.status != http.StatusAccepted {
		return
	}
	var res container.GroupResult
	if err := json.Unmarshal(a.body, &res); err != nil {
		r.note("%s %s: %v: %s", op, g, err, a.body)
		return
	}
	if op != "reset" {
		return
	}
	// Every member the reset answered for is to be deleted.
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range res.Members {
		r.deleted[m.ID] = true
		if _, ok := r.owners[m.ID]; !ok {
			r.owners[m.ID] = u.name
		}
		u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == m.ID })
	}
}

// instanceOp is what a user asks of one of its instances, mostly what its
// status allows, now and then anything (which the API must refuse cleanly).
func (r *emuChaos) instanceOp(u *emuUser) {
	id := u.live[u.rng.IntN(len(u.live))]
	p := "/api/containers/" + id
	// A group member may be deleted by a reset or a newer member; a delete
	// whose answer was lost may have happened.
	gone := []int{}
	if u.member[id] || u.unsure[id] {
		gone = append(gone, http.StatusNotFound)
	}
	a, err := r.call(u.token, http.MethodGet, p, nil, "")
	if !r.answered(u, "get", a, err, append(gone, http.StatusOK)...) {
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
	ops := map[fsm.Status][]string{
		fsm.Running: {"stop", "stop", "start", "delete"}, fsm.Stopped: {"start", "start", "start", "delete"}, fsm.Failed: {"delete"},
		fsm.Pending: {"look", "look", "delete"}, fsm.Creating: {"look", "look", "delete"},
	}[in.Status]
	if len(ops) == 0 || u.rng.IntN(6) == 0 {
		ops = []string{"start", "stop", "delete"}
	}
	switch op := ops[u.rng.IntN(len(ops))]; op {
	case "look": // the GET was it
	case "start", "stop":
		a, err := r.call(u.token, http.MethodPost, p+"/"+op, nil, "")
		if r.answered(u, op, a, err, append(gone, http.StatusAccepted, http.StatusOK, http.StatusConflict)...) && a.status == http.StatusAccepted {
			r.accept(op, u.name, id)
		}
	case "delete":
		a, err := r.call(u.token, http.MethodDelete, p, nil, "")
		if err != nil || a.status >= 500 {
			u.unsure[id] = true
		}
		if r.answered(u, "delete", a, err, append(gone, http.StatusAccepted, http.StatusConflict)...) && a.status == http.StatusAccepted {
			u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == id })
			r.accept("delete", u.name, id)
			r.mu.Lock()
			r.deleted[id] = true
			r.mu.Unlock()
		}
	}
}

// glance lists the user's own instances (only its own) or a group's.
func (r *emuChaos) glance(u *emuUser) {
	path := "/api/containers?limit=100"
	if u.rng.IntN(3) == 0 {
		path = fmt.Sprintf("/api/groups/%s-dag%d", u.name, u.rng.IntN(2))
	}
	a, err := r.call(u.token, http.MethodGet, path, nil, "")
	// A group none of whose members is left is not found.
	if !r.answered(u, "list", a, err, http.StatusOK, http.StatusNotFound) || a.status != http.StatusOK {
		return
	}
	var page struct {
		Items   []container.Instance
		Members []container.Instance
	}
	if err := json.Unmarshal(a.body, &page); err != nil {
		r.note("list %s: %v: %s", path, err, a.body)
		return
	}
	for _, in := range append(page.Items, page.Members...) {
		if in.Owner != u.name {
			r.note("%s's list %s shows %s's instance %s", u.name, path, in.Owner, in.ID)
		}
	}
}

// answer is one answer of the front door.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// call sends one request; an error is no answer.
func (r *emuChaos) call(token, method, path string, body any, idemKey string) (answer, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.st.url+path, rd)
	if err != nil {
		return answer{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// gatewayCrash is the front door's answer when the API function's
// execution environment died under the request (API Gateway's own 500 for
// a failed Lambda invocation): the kill's honest answer.
const gatewayCrash = `{"message":"Internal Server Error"}`

// gatewayUnavailable is the front door's answer when the API function ran
// out of its timeout or had no free environment in time.
const gatewayUnavailable = `{"message":"Service Unavailable"}`

// answered records one answer; it reports whether it is one of want. A
// 503 with Retry-After (the store unavailable) or the gateway's own 503 is
// an honest answer of an injected fault, so is the gateway's 500 for a
// killed API function (counted, and bounded by the kills at the end); any
// other 5xx is not.
func (r *emuChaos) answered(u *emuUser, op string, a answer, err error, want ...int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	switch {
	case err != nil:
		r.byClass["unanswered"]++
		return false
	case a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") != "":
		r.byClass["503 Retry-After"]++
		r.byStatus[op+" 503"]++
		return false
	case a.status == http.StatusServiceUnavailable && strings.TrimSpace(string(a.body)) == gatewayUnavailable:
		r.byClass["gateway 503"]++
		r.byStatus[op+" gateway 503"]++
		return false
	case a.status == http.StatusInternalServerError && strings.TrimSpace(string(a.body)) == gatewayCrash:
		r.byClass["gateway 500"]++
		r.byStatus[op+" gateway 500"]++
		return false
	}
	r.byClass[fmt.Sprintf("%dxx", a.status/100)]++
	r.byStatus[fmt.Sprintf("%s %d", op, a.status)]++
	if !slices.Contains(want, a.status) {
		r.unexpected = append(r.unexpected, fmt.Sprintf("%s as %s: %d %s", op, u.name, a.status, a.body))
		return false
	}
	return true
}

func (r *emuChaos) accept(op, user, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.accepted[id]; !ok {
		r.accepted[id] = op
	}
	r.owners[id] = user
}

func (r *emuChaos) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unexpected = append(r.unexpected, fmt.Sprintf(format, args...))
}
