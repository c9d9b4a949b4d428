// Package chaosload is the workload and the checks the chaos tests share
// (berth serve's TestServeChaos and the emulated AWS stack's
// TestEmulateChaos): seeded users driving berth's HTTP API with a mixed
// workload while a test injects its own faults, then the convergence,
// history and admission checks once the faults stop. Each test brings its
// faults and its way of reaching the API; what a run promises is asserted
// the same way on both paths.
package chaosload

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Replaying and sizing a run: the seed decides every user's operations and
// the fault schedule (the interleaving with the system's own timing is the
// machine's), so a failing seed replays the same run.
const (
	EnvSeed = "BERTH_CHAOS_SEED"
	EnvOps  = "BERTH_CHAOS_OPS"
)

// SeedAndOps reads the run's seed (EnvSeed; a new one from the clock
// without it) and its operation count (EnvOps; ops without it).
func SeedAndOps(t testing.TB, ops int) (uint64, int) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(EnvSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvSeed, s, err)
		}
		seed = v
	}
	if s := os.Getenv(EnvOps); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive count", EnvOps, s)
		}
		ops = v
	}
	return seed, ops
}

// Fault is one fault of a schedule: due once the users have done At
// operations; Kind is the test's own (the index of its count in Schedule).
type Fault struct {
	At, Kind int
}

// Schedule spreads counts[k] faults of each kind k over ops operations
// (between 5% and 90% of them, so that work is in flight at every fault
// and some follows the last one), in order of when they are due.
func Schedule(rng *rand.Rand, ops int, counts ...int) []Fault {
	var fs []Fault
	at := func() int { return ops/20 + rng.IntN(max(1, ops*85/100)) }
	for kind, n := range counts {
		for range n {
			fs = append(fs, Fault{At: at(), Kind: kind})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// Answer is one answer of the API.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Caller sends one request to the API as the holder of token, with an
// Idempotency-Key when idemKey is set; an error is no answer (the server
// was killed under it, the connection dropped). It is called from several
// goroutines at once.
type Caller func(method, path, token string, body any, idemKey string) (Answer, error)

// User is one API user of a run.
type User struct {
	Name, Token string
}

// Templates name the templates a test put in place for the workload.
type Templates struct {
	// Long runs until stopped; Quick exits 0 after a moment; Bad exits
	// BadExit after a moment.
	Long, Quick, Bad string
	// Brief, when set, runs until stopped under a short lifetime and a
	// short retention of its stopped instances: berth stops and then
	// deletes them by itself, racing the users and the faults. Checked:
	// one action per expiry and per retention (Histories), none missed
	// (Convergence).
	Brief string
}

// BadExit is the exit code of the Bad template's command: a failure with
// it is the container's own doing.
const BadExit = 3

// Options configure a run.
type Options struct {
	Seed  uint64
	Ops   int // operations over all users
	Users []User
	// AdminToken lists every instance and reads every history.
	AdminToken string
	Call       Caller
	Templates  Templates
	// MaxLive bounds a user's undeleted instances, so that the engine's
	// load stays that of a few dozen containers.
	MaxLive int
	// Think is the least pause between two operations of a user, and
	// ThinkSpread the random part added to it: pacing, not a wait for a
	// result, so that the operations span the fault schedule.
	Think, ThinkSpread time.Duration
	// Groups adds group members, group finish and group reset to the
	// workload.
	Groups bool
	// Keys sends every create with an Idempotency-Key, sends it again with
	// the same key after a 5xx or no answer (a client that keeps its
	// promise of a single instance), and now and then repeats an accepted
	// create, which must answer the same instance.
	Keys bool
	// Waits adds GET …/wait to what users ask of an instance.
	Waits bool
	// Peeks has users look for other users' instances: 404, never 403.
	Peeks bool
	// Honest, when set, names the class of a 5xx answer that is an
	// injected fault's honest answer (a 503 with Retry-After, say), or
	// returns "" when it is not; without it no 5xx is honest.
	Honest func(Answer) string
	// Quotas: the deployment sets quotas, so a start may also answer 429
	// (a create always may: the queue or a quota full).
	Quotas bool
	// OwnFailuresOnly: every failure must be the container's own (the Bad
	// template's exit) or follow the test's tampering with it; without
	// it, any failure that says why is an outcome.
	OwnFailuresOnly bool
}

// Run is one chaos run's workload and what it recorded.
type Run struct {
	o     Options
	users []*user

	mu         sync.Mutex
	cond       *sync.Cond
	done       int // operations finished, over all users
	usersLeft  int
	requests   int
	byClass    map[string]int // "2xx", "4xx", "5xx", "unanswered", an honest class …
	byStatus   map[string]int // "create 202" …
	unexpected []string       // answers outside an operation's contract
	acceptedN  int            // requests answered 202
	accepted   map[string]string
	owners     map[string]string // instance → owner, every instance heard of
	templates  map[string]string // instance → template, where known
	deleted    map[string]bool   // instances whose deletion was accepted (delete, group reset)
	tampered   map[string]string // instance → "killed" or "removed"
	replays    int               // creates repeated with their key, answered with the same instance
	killed     int               // containers the test killed
	removed    int               // containers the test removed
}

// New prepares a run; Drive runs it.
func New(o Options) *Run {
	r := &Run{o: o, byClass: map[string]int{}, byStatus: map[string]int{}, accepted: map[string]string{},
		owners: map[string]string{}, templates: map[string]string{}, deleted: map[string]bool{}, tampered: map[string]string{}}
	r.cond = sync.NewCond(&r.mu)
	for i, u := range o.Users {
		r.users = append(r.users, &user{User: u, rng: rand.New(rand.NewPCG(o.Seed, uint64(i+1))),
			member: map[string]bool{}, unsure: map[string]bool{}, brief: map[string]bool{}})
	}
	return r
}

// Drive runs the users' operations and, as they progress, calls inject
// with each fault of schedule when it is due (one at a time, in order);
// it returns once every user is done and every fault injected.
func (r *Run) Drive(schedule []Fault, inject func(Fault)) {
	r.usersLeft = len(r.users)
	var wg sync.WaitGroup
	per := r.o.Ops / len(r.users)
	for i, u := range r.users {
		n := per
		if i == 0 {
			n += r.o.Ops % len(r.users)
		}
		wg.Go(func() { r.userLoop(u, n) })
	}
	for _, f := range schedule {
		r.waitProgress(f.At)
		inject(f)
	}
	wg.Wait()
}

// waitProgress waits until n operations are done or no user is left.
func (r *Run) waitProgress(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done < n && r.usersLeft > 0 {
		r.cond.Wait()
	}
}

func (r *Run) userLoop(u *user, n int) {
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
		time.Sleep(r.o.Think + time.Duration(u.rng.Int64N(int64(max(r.o.ThinkSpread, 1))))) // pacing
	}
}

// Tampered records that the test killed ("killed") or removed ("removed")
// the instance's container behind berth's back.
func (r *Run) Tampered(id, how string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if how == "removed" {
		r.removed++
	} else {
		r.killed++
	}
	if how == "removed" || r.tampered[id] == "" {
		r.tampered[id] = how
	}
}

// Figures are the run's counts, for a test's figures line.
type Figures struct {
	Requests int
	ByClass  map[string]int
	ByStatus map[string]int
	// Accepted is the requests answered 202; Instances the instances
	// accepted; Replays the creates repeated with their key.
	Accepted, Instances, Replays int
}

// Figures returns the run's counts so far.
func (r *Run) Figures() Figures {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := Figures{Requests: r.requests, ByClass: map[string]int{}, ByStatus: map[string]int{},
		Accepted: r.acceptedN, Instances: len(r.accepted), Replays: r.replays}
	for k, v := range r.byClass {
		f.ByClass[k] = v
	}
	for k, v := range r.byStatus {
		f.ByStatus[k] = v
	}
	return f
}

// Unexpected returns the answers outside their operation's contract.
func (r *Run) Unexpected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.unexpected...)
}

func (r *Run) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unexpected = append(r.unexpected, fmt.Sprintf(format, args...))
}
