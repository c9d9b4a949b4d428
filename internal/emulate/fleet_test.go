package emulate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
)

// fleetLine is one log line of a loop function's fan-out (fleetfanout.Loop):
// a tick's "fanned out" or a record's "shard pass".
type fleetLine struct {
	Msg    string `json:"msg"`
	Loop   string `json:"loop"`
	Tick   string `json:"tick"`
	Shard  string `json:"shard"`
	Shards int    `json:"shards"`
	Sent   int    `json:"sent"`
}

// fleetLines are the lines function fn logged about its fan-out, from the
// functions' output ([Function#n] prefixed lines).
func (st *stack) fleetLines(fn string) []fleetLine {
	var out []fleetLine
	sc := bufio.NewScanner(strings.NewReader(st.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		prefix, rest, ok := strings.Cut(sc.Text(), "] ")
		if !ok || !strings.HasPrefix(prefix, "["+fn+"#") {
			continue
		}
		var l fleetLine
		if json.Unmarshal([]byte(rest), &l) == nil && (l.Msg == "fanned out" || l.Msg == "shard pass") {
			out = append(out, l)
		}
	}
	return out
}

// fannedOutTick is a tick of the reconciler's that was sent to 2 shards and
// whose 2 shard passes both ran, "" while there is none.
func fannedOutTick(lines []fleetLine) string {
	passes := map[string]map[string]bool{}
	var sent []string
	for _, l := range lines {
		switch {
		case l.Loop != "reconcile":
		case l.Msg == "fanned out" && l.Shards == 2 && l.Sent == 2:
			sent = append(sent, l.Tick)
		case l.Msg == "shard pass":
			if passes[l.Tick] == nil {
				passes[l.Tick] = map[string]bool{}
			}
			passes[l.Tick][l.Shard] = true
		}
	}
	for _, tick := range sent {
		if passes[tick]["0/2"] && passes[tick]["1/2"] {
			return tick
		}
	}
	return ""
}

// TestFleetFanOut: with FleetShards=2 the emulated stack plays the
// reconciler's shard queue and its mapping as template.yaml has them: a
// tick of the reconciler's schedule sends one message per shard, and the
// queue's poller invokes the same function with each, which runs the
// pass of shard 0/2 and of 1/2 for that tick. A container that exits
// behind berth's back (no watcher) is recorded by them.
func TestFleetFanOut(t *testing.T) {
	t.Parallel()
	st := start(t, setup{params: map[string]string{"FleetShards": "2"},
		schedules: map[string]time.Duration{"ReconcilerFunction": 4 * time.Second}})
	q := st.model().Queues["ReconcileShardQueue"]
	if q == nil {
		t.Fatal("the stack has no ReconcileShardQueue")
	}
	st.queueURL(q.Name) // made in the SQS emulator
	if !strings.Contains(st.logs.String(), `"mapping":"ReconcileShardMapping"`) {
		t.Errorf("the shard queue's mapping is not played:\n%s", tail(st.logs.String(), 4000))
	}

	id := st.create(aliceToken, "busybox", "")
	st.wait(aliceToken, id, "running", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := st.rt.Stop(ctx, runtime.Ref{InstanceID: id, Node: "local"}, 0); err != nil {
		t.Fatal(err)
	}
	st.wait(aliceToken, id, "failed", time.Minute)

	deadline := time.Now().Add(time.Minute)
	tick := fannedOutTick(st.fleetLines("ReconcilerFunction"))
	for ; tick == "" && time.Now().Before(deadline); tick = fannedOutTick(st.fleetLines("ReconcilerFunction")) {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(500 * time.Millisecond): // the next look at the functions' output
		}
	}
	if tick == "" {
		t.Fatalf("no tick was fanned out to both shards and run by them: %+v", st.fleetLines("ReconcilerFunction"))
	}
	t.Logf("tick %s: sent to 2 shards, both passes ran", tick)
}
