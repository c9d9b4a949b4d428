package emulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/chaosload"
)

var chaosLong = flag.Bool("chaos.long", false,
	"TestEmulateChaos: the long run (1600 operations, more function kills and tampering); "+chaosload.EnvOps+" still overrides the count")

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
	p.seed, p.ops = chaosload.SeedAndOps(t, p.ops)
	return p
}

// killable are the functions whose execution environments the run kills,
// with their weights: the API and the workers most, as they are the busiest.
var killable = []struct {
	fn     string
	weight int
}{{"ApiFunction", 3}, {"DispatcherFunction", 2}, {"CreateWorkerFunction", 3}, {"LifecycleWorkerFunction", 2}, {"ReconcilerFunction", 1},
	{"NotifyFunction", 2}}

// chaosHealthyLag bounds how long after a change the healthy receiver gets
// it through the emulated stack's faults (chaosload.Run.CheckDeliveries):
// a killed notify environment's message comes back after the visibility
// timeout, DynamoDB's faults retry, and the stack's 4 notify environments
// (AWS: 10) serve alice's deferred deliveries and carol's refused ones
// beside bob's (p50 20 s, max 25 s measured). An owner holding every
// environment (its share 4, as it was) made them 91 s late and growing
// within a default run.
const chaosHealthyLag = 45 * time.Second

// emuChaos is one run: the shared workload and what the fault schedule
// records.
type emuChaos struct {
	t    *testing.T
	st   *stack
	plan emuChaosPlan
	aws  *chaosAWS
	load *chaosload.Run
	// hooks are the users' webhook receivers; quotas what the quota watch saw.
	hooks  *chaosload.Receivers
	quotas chaosload.QuotaWatch

	mu         sync.Mutex
	kills      map[string]int // by function
	killedEnvs int            // execution environments killed (an RIE with its bootstrap)
	storms     int            // DynamoDB fault storms
	outages    int            // Docker engine outages
}

// TestEmulateChaos: users drive the emulated AWS stack's front door with
// the chaos workload (chaosload: creates, group members, starts, stops,
// deletes, group finish and reset, repeated creates with their
// Idempotency-Key) while, outside berth's code, function execution
// environments are SIGKILLed, DynamoDB answers throttling errors, 500s and
// TransactionConflict cancellations, is slow, or loses answers, SQS
// delivers messages twice, late and loses deletes (with a short
// visibility timeout), the Docker engine is cut off for a while, and
// containers are killed or removed on the engine. Once the
// faults stop and the stack settles: no accepted request lost, no FSM
// violation, no orphan or duplicate container, the admission counter
// exact, the dead-letter queues explained, no 5xx but honest ones.
//
// It runs beside the other stack tests (t.Parallel): every fault it
// injects is its own stack's (its proxies in front of DynamoDB, SQS and
// the engine, its own functions' processes, its own scope's containers),
// and what it asserts does not depend on how fast the machine is: the
// settling bound (settleWithin) is minutes where runs settle in seconds.
func TestEmulateChaos(t *testing.T) {
	t.Parallel()
	plan := emuChaosPlanFromEnv(t)
	t.Logf("chaos seed %d (replay: %s=%d), %d operations, %d function kills, %d tampers, DynamoDB faults on %.0f%% of requests "+
		"(%d storms of %s at %.0f%%), %d engine outages of %s, "+
		"SQS duplicates on %.0f%% of sends, lost deletes %.0f%%, visibility %s",
		plan.seed, chaosload.EnvSeed, plan.seed, plan.ops, plan.kills, plan.tampers, plan.ddbRate*100, plan.storms, plan.storm, stormRate*100, plan.outages, plan.outage, plan.dupRate*100, plan.lostDeleteRate*100, plan.visibility)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run with %s=%d", chaosload.EnvSeed, plan.seed)
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
		// Quotas below the workload's live instances (alice and carol share
		// team data's), and receivers on loopback retried soon.
		quotas:   map[string]any{"default": map[string]any{"instances": 8, "running": 5}},
		webhooks: map[string]any{"allowed_networks": []string{"127.0.0.0/8"}, "retry_backoff": "500ms", "retry_backoff_max": "3s"},
	})
	st.putTemplate("quick", []string{"sh", "-c", "sleep 1; exit 0"})
	st.putTemplate("bad", []string{"sh", "-c", "sleep 1; exit 3"})
	st.putTemplateDoc("brief", []string{"sh", "-c", "exec sleep 3600"},
		map[string]any{"lifetime": map[string]any{"default": "2s"}, "retention": map[string]any{"stopped": "2s"}})

	run := &emuChaos{t: t, st: st, plan: plan, aws: faults, kills: map[string]int{}}
	run.load = chaosload.New(chaosload.Options{
		Seed: plan.seed, Ops: plan.ops, AdminToken: adminToken, Call: run.call, Honest: honest,
		Users:     []chaosload.User{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}, {Name: "carol", Token: carolToken}},
		Templates: chaosload.Templates{Long: "busybox", Quick: "quick", Bad: "bad", Brief: "brief"},
		MaxLive:   10, Think: 50 * time.Millisecond, ThinkSpread: 250 * time.Millisecond,
		Groups: true, Keys: true, Quotas: true,
	})
	run.hooks = chaosload.NewReceivers(t)
	if err := run.load.Subscribe(run.hooks); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(plan.seed, 0))
	schedule := chaosload.Schedule(rng, plan.ops, plan.kills, plan.tampers, plan.storms, plan.outages)

	began := time.Now()
	quotaWatch := run.load.WatchQuotas(200 * time.Millisecond)
	faults.setOn(true)
	run.load.Drive(schedule, func(f chaosload.Fault) {
		switch f.Kind {
		case faultKill:
			run.killFunction(rng)
		case faultTamper:
			if did := run.load.Tamper(context.Background(), st.rt, rng); strings.Contains(did, "tamper") {
				t.Log(did)
			}
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
	})
	faults.setOn(false)
	faultsEnded := time.Now()
	t.Logf("chaos phase: %s", faultsEnded.Sub(began).Round(time.Millisecond))
	run.quotas = quotaWatch()
	for _, o := range run.quotas.Over {
		t.Errorf("over a quota: %s", o)
	}
	run.hooks.FlakyUp() // down for the whole chaos phase

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

// The kinds of fault of the schedule, in the order of their counts.
const (
	faultKill = iota
	faultTamper
	faultStorm
	faultOutage
)

// call sends one request to the front door; an error is no answer.
func (r *emuChaos) call(method, path, token string, body any, idemKey string) (chaosload.Answer, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.st.url+path, rd)
	if err != nil {
		return chaosload.Answer{}, err
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
		return chaosload.Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return chaosload.Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}

// gatewayCrash is the front door's answer when the API function's
// execution environment died under the request (API Gateway's own 500 for
// a failed Lambda invocation): the kill's honest answer.
const gatewayCrash = `{"message":"Internal Server Error"}`

// gatewayUnavailable is the front door's answer when the API function ran
// out of its timeout or had no free environment in time.
const gatewayUnavailable = `{"message":"Service Unavailable"}`

// honest names the class of a 5xx that is an injected fault's honest
// answer: a 503 with Retry-After (the store unavailable), the gateway's own
// 503, or the gateway's 500 for a killed API function (counted, and
// bounded by the kills at the end); any other 5xx is not ("").
func honest(a chaosload.Answer) string {
	switch body := strings.TrimSpace(string(a.Body)); {
	case a.Status == http.StatusServiceUnavailable && a.Header.Get("Retry-After") != "":
		return "503 Retry-After"
	case a.Status == http.StatusServiceUnavailable && body == gatewayUnavailable:
		return "gateway 503"
	case a.Status == http.StatusInternalServerError && body == gatewayCrash:
		return "gateway 500"
	}
	return ""
}
