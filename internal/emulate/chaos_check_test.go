package emulate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/berth-io/berth/internal/chaosload"
	"github.com/berth-io/berth/internal/emulate"
	"github.com/berth-io/berth/internal/eventcheck"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/worker"
)

// check waits for the stack to settle once the faults stopped, then
// asserts what the run promises and logs its figures.
func (r *emuChaos) check(faultsEnded time.Time) {
	t := r.t
	// Everything must converge within settleWithin; convergence ends the
	// wait at once.
	settled := r.load.Settle(r.st.rt, faultsEnded, settleWithin(r.plan), 500*time.Millisecond)
	converged := settled.After.Round(time.Millisecond)
	for _, p := range settled.Last {
		t.Logf("settle: %s", p)
	}
	if dir := os.Getenv(envChaosLogDir); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("chaos-%d.log", r.plan.seed)), []byte(r.st.logs.String()), 0o600)
	}
	for _, p := range settled.Problems {
		t.Errorf("not converged %s after the faults stopped: %s", converged, p)
	}
	checked := r.load.Histories()
	for _, p := range checked.Lost {
		t.Errorf("lost: %s", p)
	}
	for _, p := range checked.Violations {
		t.Errorf("FSM violation: %s", p)
	}
	for _, p := range r.load.Unexpected() {
		t.Errorf("unexpected answer: %s", p)
	}
	hookProblems, hookFigures, err := r.load.CheckDeliveries(r.hooks, chaosHealthyLag)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hookProblems {
		t.Error(p)
	}
	dead := r.deadLetters(checked.Histories)
	direct := dynamostore.New(r.st.ddb, dynamostore.Options{TablePrefix: r.st.params["TablePrefix"]}) // straight from DynamoDB Local, not through the fault proxy
	admission, holding, err := chaosload.Admission(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	if admission != holding {
		t.Errorf("admission counter %d, but %d instances are pending or creating", admission, holding)
	}
	quotaProblems, quotaSubjects, err := chaosload.QuotaBalance(context.Background(), direct, []string{"alice", "bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range quotaProblems {
		t.Errorf("quota reservation not released or doubled: %s", p)
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
	load := r.load.Figures()
	killed, removed := r.load.TamperedCounts()
	// A gateway 500 is the answer to a request whose API environment was
	// killed under it: no more of them than API environments killed times
	// the requests one environment serves at once (one).
	if n := load.ByClass["gateway 500"]; n > r.kills["ApiFunction"] {
		t.Errorf("%d gateway 500s, but only %d API execution environments were killed", n, r.kills["ApiFunction"])
	}
	ddbFaults, sqsDups := 0, figures[sqsDupSend]
	for k, v := range figures {
		if strings.HasPrefix(k, "ddb ") {
			ddbFaults += v
		}
	}
	t.Logf("chaos figures: seed %d; %d operations by 3 users, %d requests (%v); accepted %d instances, %d creates repeated with their key; "+
		"%d invocations, function kills %d %v, invocations crashed %v; stream batches retried %d (bisected %d, given up %d); "+
		"DynamoDB faults %d of %d requests (%d storms; TransactionConflict cancellations %d), SQS duplicates %d; faults %v; "+
		"containers killed %d, removed %d; engine outages %d; lost %d; orphans %d; duplicate containers %d; FSM violations %d; TransitionRejected %d; "+
		"dead letters %d; converged %s after the faults; admission counter %d (instances holding a slot %d); expiries %d, retention deletes %d; "+
		"quota standings read %d, over a quota %d, reservations balanced for %d subjects; %s",
		r.plan.seed, r.plan.ops, load.Requests, load.ByClass, load.Instances, load.Replays,
		invocations, r.killedEnvs, r.kills, crashed, streamRetries, bisections, givenUp, ddbFaults, ddbRequests, r.storms, figures[ddbTxConflict], sqsDups, figures,
		killed, removed, r.outages, len(checked.Lost), settled.Orphans, settled.Duplicates, len(checked.Violations), checked.Rejected,
		dead, converged, admission, holding, checked.Expiries, checked.Retentions,
		r.quotas.Reads, len(r.quotas.Over), quotaSubjects, hookFigures)
	t.Logf("answers: %v", load.ByStatus)
	if t.Failed() {
		suspects := checked.SuspectsWith(settled.Problems)
		checked.LogHistories(t.Logf, suspects, 12)
		chaosload.LogLinesOf(t.Logf, logs, suspects, 6, 40)
	}
}

// envChaosLogDir, when set, names a directory where the run leaves the
// stack's whole output (its functions' logs) as chaos-<seed>.log, to read
// the timing of any instance's messages after a replay.
const envChaosLogDir = "BERTH_CHAOS_LOGDIR"

// settleWithin is how long after the faults the stack may take to settle.
// Once they stop, every wait in flight ends within a bounded time: a
// message lost to a kill comes back after its visibility timeout, a swept
// outbox item after outbox_sweep_after, a retried operation after at most
// the backoff of max_attempts-1 attempts (16 s), and an operation that
// waited for the engine through one outage of length L after its capped
// exponential backoff, which stays under about 2L past the outage's end.
// Two minutes cover all of that several times over on a loaded machine
// (the runs settle in 2-20 s). Only with several outages may one wait
// legitimately grow to worker.DefaultBackoffMax: a message that found the
// engine cut off each time it looked (once per outage) backs off further
// each time, and cannot tell that the engine was up in between; it is
// allowed that much more. A create stuck in pending or creating settles
// only through the reconciler's stuck sweep (10 minutes), past either
// bound, so it fails the run.
func settleWithin(p emuChaosPlan) time.Duration {
	within := 2 * time.Minute
	if p.outages > 1 {
		within += worker.DefaultBackoffMax
	}
	return within
}

// deadLetters reads every dead-letter queue of the stack: each message
// there must be explained by a recorded failure of its instance. It
// returns how many there were.
func (r *emuChaos) deadLetters(hs map[string]chaosload.History) int {
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
				if evs, err := r.load.Events(msg.InstanceID); err == nil {
					h = chaosload.History{Events: evs, Found: eventcheck.Check(msg.InstanceID, evs)}
				}
			}
			if len(h.Found.Failures) == 0 {
				r.t.Errorf("dead letter (%s of %s) on %s, but the instance has no recorded failure (last status %q)",
					msg.Op, msg.InstanceID, q.DeadLetter, h.Found.Last)
			}
		}
	}
	return n
}
