package main

import (
	"context"
	"flag"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/chaosload"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/testenv"
)

var chaosLong = flag.Bool("chaos.long", false,
	"TestServeChaos: the long run (2000 operations, more kills, tampering and outages); "+chaosload.EnvOps+" still overrides the count; TestServeBindsProperty: 300 random steps instead of 14")

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
	p.seed, p.ops = chaosload.SeedAndOps(t, p.ops)
	return p
}

// The kinds of fault of the schedule, in the order of their counts.
const (
	faultKill = iota
	faultTamper
	faultOutage
)

// TestServeChaos: several users drive a real `berth serve` and a real
// Docker engine with the chaos workload (chaosload: create, start, stop,
// delete, wait, list, look for another user's instance) while the server
// is SIGKILLed and restarted, containers are killed or removed behind its
// back and the engine is unreachable for longer than the retry budget.
// Once the faults stop: no accepted request lost, no orphan, no FSM
// violation, every instance converged with its container, the admission
// counter exact, no 5xx. berth serve runs only on the embedded store
// (bolt); the DynamoDB store is the AWS deployment's and is not reachable
// through serve.
func TestServeChaos(t *testing.T) {
	t.Parallel()
	plan := chaosPlanFromEnv(t)
	t.Logf("chaos seed %d (replay: %s=%d), %d operations, %d kills, %d tampers, %d outage(s) of %s against a retry budget of %s",
		plan.seed, chaosload.EnvSeed, plan.seed, plan.ops, plan.kills, plan.tampers, plan.outages, plan.outage, plan.budget)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run with %s=%d", chaosload.EnvSeed, plan.seed)
		}
	})
	proxy := newEngineProxy(t, testenv.DockerHost(t))
	e := newServeEnv(t, serveOptions{
		orphanGrace: 3 * time.Second, reconcileEvery: time.Second,
		maxAttempts: plan.maxAttempts, dockerEndpoint: proxy.endpoint(),
		teams: true, extra: chaosQuotas + chaosWebhooks,
	})
	e.start()
	e.putTemplates()
	e.must(e.call("PUT", "/api/templates/brief", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exec sleep 3600"},
		Lifetime: &container.Lifetime{Default: "2s"}, Retention: &container.Retention{Stopped: "2s"}}), http.StatusCreated)

	rng := rand.New(rand.NewPCG(plan.seed, 0))
	users := []chaosload.User{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}, {Name: "carol", Token: carolToken}}
	run := chaosload.New(chaosload.Options{
		Seed: plan.seed, Ops: plan.ops, Users: users, AdminToken: adminToken,
		// berth serve takes no Idempotency-Key in this workload (Keys is off).
		Call: func(method, path, token string, body any, _ string) (chaosload.Answer, error) {
			a, err := e.do(method, path, token, body)
			return chaosload.Answer{Status: a.status, Header: a.header, Body: a.body}, err
		},
		Templates: chaosload.Templates{Long: "sleeper", Quick: "ok", Bad: "bad", Brief: "brief"},
		MaxLive:   8, Think: 20 * time.Millisecond, ThinkSpread: 200 * time.Millisecond,
		Waits: true, Peeks: true, OwnFailuresOnly: true, Quotas: true,
	})
	schedule := chaosload.Schedule(rng, plan.ops, plan.kills, plan.tampers, plan.outages)
	hooks := chaosload.NewReceivers(t)
	if err := run.Subscribe(hooks); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	quotaWatch := run.WatchQuotas(100 * time.Millisecond)
	kills := 0
	var outages []time.Duration
	run.Drive(schedule, func(f chaosload.Fault) {
		switch f.Kind {
		case faultKill:
			e.kill()
			kills++
			e.start()
		case faultTamper:
			if did := run.Tamper(context.Background(), e.engine, rng); strings.Contains(did, "tamper") {
				t.Log(did)
			}
		case faultOutage:
			proxy.cut()
			cut := time.Now()
			time.Sleep(plan.outage) // the fault is a length of time
			proxy.restore()
			outages = append(outages, time.Since(cut).Round(100*time.Millisecond))
		}
	})
	faultsEnded := time.Now()
	t.Logf("chaos phase: %s", faultsEnded.Sub(began).Round(time.Millisecond))
	watched := quotaWatch()
	for _, o := range watched.Over {
		t.Errorf("over a quota: %s", o)
	}
	hooks.FlakyUp() // down for the whole chaos phase

	// Once faults stop, everything must converge; the deadline is generous
	// for a loaded machine, and convergence ends the wait at once.
	settled := run.Settle(e.engine, faultsEnded, 2*time.Minute, 250*time.Millisecond)
	converged := settled.After.Round(time.Millisecond)
	for _, p := range settled.Last {
		t.Logf("settle: %s", p)
	}
	for _, p := range settled.Problems {
		t.Errorf("not converged %s after the faults stopped: %s", converged, p)
	}
	hookProblems, hookFigures, err := run.CheckDeliveries(hooks, chaosHealthyLag)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hookProblems {
		t.Error(p)
	}
	checked := run.Histories()
	for _, p := range checked.Lost {
		t.Errorf("lost: %s", p)
	}
	for _, p := range checked.Violations {
		t.Errorf("FSM violation: %s", p)
	}
	for _, p := range run.Unexpected() {
		t.Errorf("unexpected answer: %s", p)
	}
	lostCount := len(checked.Lost)
	for _, p := range settled.Problems {
		if strings.HasSuffix(p, "its delete was accepted") || strings.HasSuffix(p, "is not settled") {
			lostCount++
		}
	}
	e.stop()
	logs := e.allLogs.String()
	admission, holding, quotaSubjects := balancesAfter(t, e, users)
	if admission != holding {
		t.Errorf("admission counter %d, but %d instances are pending or creating", admission, holding)
	}
	load := run.Figures()
	if load.ByClass["5xx"] > 0 {
		t.Errorf("%d answers were 5xx", load.ByClass["5xx"])
	}
	if t.Failed() {
		t.Logf("last server log:\n%s", tail(logs, 6000))
		suspects := checked.SuspectsWith(settled.Problems)
		checked.LogHistories(t.Logf, suspects, 12)
		chaosload.LogLinesOf(t.Logf, logs, suspects, 6, 40)
	}
	killed, removed := run.TamperedCounts()
	t.Logf("chaos figures: seed %d; %d operations by %d users, %d requests (%v); %d server kills; %d containers killed, %d removed; "+
		"engine outages %v (budget %s); accepted %d; lost %d; orphans %d; FSM violations %d; TransitionRejected %d; "+
		"converged %s after the faults; admission counter %d (instances holding a slot %d); expiries %d, retention deletes %d; "+
		"quota standings read %d, over a quota %d, reservations balanced for %d subjects; %s",
		plan.seed, plan.ops, len(users), load.Requests, load.ByClass, kills, killed, removed,
		outages, plan.budget, load.Accepted, lostCount, settled.Orphans, len(checked.Violations), checked.Rejected,
		converged, admission, holding, checked.Expiries, checked.Retentions, watched.Reads, len(watched.Over), quotaSubjects, hookFigures)
	t.Logf("answers: %v", load.ByStatus)
}

// chaosQuotas are the chaos runs' quotas: below the workload's 8 live
// instances a user, so that they refuse creates and starts; alice and
// carol share team data's.
const chaosQuotas = "quotas:\n  default: {instances: 6, running: 4}\n"

// chaosWebhooks lets the runs' receivers (loopback) be subscribed and
// retries a refused delivery soon, so that the flaky receiver's backlog
// arrives within the wait once it is up.
const chaosWebhooks = "webhooks:\n  allowed_networks: [127.0.0.0/8]\n  retry_backoff: 500ms\n  retry_backoff_max: 3s\n"

// chaosHealthyLag bounds how long after a change the healthy receiver
// gets it through berth serve's faults (Run.CheckDeliveries): a change a
// kill interrupted is delivered after the restart (up to 10 s measured);
// waiting behind the hanging receiver's deliveries would cost 15 s a turn,
// turn after turn, as its backlog fills the 16 consumers.
const chaosHealthyLag = 20 * time.Second

// balancesAfter opens the stopped server's store and returns its
// admission counter and the number of instances that hold a slot, and
// fails t for each quota reservation that is not what its subject's
// instances hold (chaosload.QuotaBalance); it returns the subjects
// compared.
func balancesAfter(t *testing.T, e *serveEnv, users []chaosload.User) (counter, holding, subjects int) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(e.dir, "data", "berth.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counter, holding, err = chaosload.Admission(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Name
	}
	problems, subjects, err := chaosload.QuotaBalance(context.Background(), st, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("quota reservation not released or doubled: %s", p)
	}
	return counter, holding, subjects
}
