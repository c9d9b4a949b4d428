package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestServeFairAdmission: through berth serve on a real Docker engine,
// with create_queue_max_pending 40, a share of 20 per owner and 2 creates
// at once: alice submits 200 creates as fast as she can; hers beyond her
// share are 429 with Retry-After, bob's 5 (sent once alice's 20 are
// queued) are all accepted, and the create queue serves the owner with
// fewest creates in flight first: while bob's run, alice's take turns with
// them, so at most bob's 5 of hers and the 2 already in flight start in
// the span from bob's first create to his last one running (first come,
// first served would start most of her 20 first). An order of starts, not
// a time: the bound holds on a slow or loaded machine alike.
func TestServeFairAdmission(t *testing.T) {
	e := newServeEnv(t, serveOptions{maxConcurrency: 2, maxPending: 40, containerKeys: "create_queue_max_pending_per_owner: 20\n"})
	e.start()
	e.putTemplates()
	var accepted, refused, other atomic.Int32
	var wg sync.WaitGroup
	next := make(chan struct{}, 200)
	for range 200 {
		next <- struct{}{}
	}
	close(next)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				r, err := e.do("POST", "/api/containers", aliceToken, map[string]string{"template": "sleeper"})
				switch {
				case err == nil && r.status == http.StatusAccepted:
					accepted.Add(1)
				case err == nil && r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") != "":
					refused.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 20 || refused.Load() != 180 || other.Load() != 0 {
		t.Fatalf("alice's 200 creates: %d accepted, %d refused with Retry-After, %d else; want her share, 20", accepted.Load(), refused.Load(), other.Load())
	}
	var bob []container.Instance
	for range 5 {
		bob = append(bob, e.instance(e.must(e.call("POST", "/api/containers", bobToken, map[string]string{"template": "sleeper"}), http.StatusAccepted)))
	}
	from, until := bob[0].CreatedAt, time.Time{}
	for _, in := range bob {
		ran := e.waitAs(bobToken, in.ID, fsm.Running, 3*time.Minute)
		if ran.StartedAt != nil && ran.StartedAt.After(until) {
			until = *ran.StartedAt
		}
	}
	var page struct{ Items []container.Instance }
	if err := json.Unmarshal(e.must(e.call("GET", "/api/containers?limit=100", aliceToken, nil), http.StatusOK).body, &page); err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, in := range page.Items {
		if in.StartedAt != nil && in.StartedAt.After(from) && !in.StartedAt.After(until) {
			before++
		}
	}
	t.Logf("while bob's 5 creates waited (%s), %d of alice's %d queued ones started", until.Sub(from).Round(time.Millisecond), before, len(page.Items))
	if before > len(bob)+2 {
		t.Errorf("%d of alice's creates started while bob's 5 waited; fair turns allow at most %d", before, len(bob)+2)
	}
}

// waitAs waits, as token's user, until id is want.
func (e *serveEnv) waitAs(token, id string, want fsm.Status, within time.Duration) container.Instance {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := e.call("GET", "/api/containers/"+id+"/wait?status="+string(want)+"&timeout=20s", token, nil)
		if r.status == http.StatusOK {
			return e.instance(r)
		}
		if r.status != http.StatusRequestTimeout || time.Now().After(deadline) {
			e.t.Fatalf("waiting for %s to be %s: %d %s", id, want, r.status, r.body)
		}
	}
}
