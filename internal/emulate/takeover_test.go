package emulate_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// passCounter counts the reconciler function's invocations (setup.onInvoke)
// so that a test waits for passes, not for time.
type passCounter struct {
	mu   sync.Mutex
	n    int
	more chan struct{}
}

func newPassCounter() *passCounter { return &passCounter{more: make(chan struct{}, 1)} }

func (c *passCounter) onInvoke(fn string, _ int) {
	if !strings.Contains(fn, "Reconciler") {
		return
	}
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// waitPasses waits until n more reconcile passes have ended.
func (c *passCounter) waitPasses(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	want := c.n + n
	c.mu.Unlock()
	deadline := time.After(2 * time.Minute)
	for {
		c.mu.Lock()
		got := c.n
		c.mu.Unlock()
		if got >= want {
			return
		}
		select {
		case <-c.more:
		case <-deadline:
			t.Fatalf("%d reconcile passes after 2 minutes, want %d", got, want)
		}
	}
}

// createMember creates a member of group as token's user and returns its id.
func (st *stack) createMember(token, template, name, group string) string {
	st.t.Helper()
	r := st.do(http.MethodPost, "/api/containers", token, map[string]any{"template": template, "name": name, "group": group})
	if r.status != http.StatusAccepted {
		st.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.json(st.t)["id"].(string)
}

// get returns the container as token's user sees it.
func (st *stack) get(token, id string) map[string]any {
	st.t.Helper()
	r := st.do(http.MethodGet, "/api/containers/"+id, token, nil)
	if r.status != http.StatusOK {
		st.t.Fatalf("GET %s: %d %s", id, r.status, r.body)
	}
	return r.json(st.t)
}

// eventCount counts the container's events of type typ.
func (st *stack) eventCount(token, id, typ string) int {
	st.t.Helper()
	r := st.do(http.MethodGet, "/api/containers/"+id+"/events?limit=100", token, nil)
	if r.status != http.StatusOK {
		st.t.Fatalf("events of %s: %d %s", id, r.status, r.body)
	}
	n := 0
	items, _ := r.json(st.t)["items"].([]any)
	for _, it := range items {
		if ev, _ := it.(map[string]any); ev["type"] == typ {
			n++
		}
	}
	return n
}

// TestDeploymentTakeover: container.recover_running_dag_on_start=false
// through the Lambda functions. A deployment of the stack leaves group
// members queued (its Docker host does not answer); its own reconcile
// passes leave them be. The next deployment (another configuration, the
// same tables) takes over: its reconciler fails them with the interrupted
// reason, once, and nothing else: an instance without a group, and a member
// the new deployment creates, are left as they are through later passes.
// The new deployment's host does not answer either, so that no worker can
// take a queued member up before the takeover's first pass: the window
// docs/deploy.md names ("Deployments and recover_running_dag_on_start"),
// which a test must not race.
func TestDeploymentTakeover(t *testing.T) {
	t.Parallel()
	keys := map[string]any{"recover_running_dag_on_start": false, "outbox_sweep_after": "2s"}
	passes := newPassCounter()
	first := start(t, setup{container: keys, scheduleEvery: time.Second, onInvoke: passes.onInvoke,
		dockerEndpoint: "unix:///nonexistent/berth-takeover-test.sock"})
	tables := dynamostore.New(first.ddb, dynamostore.Options{TablePrefix: first.params["TablePrefix"]})
	passes.waitPasses(t, 1)
	gen1 := deployment(t, tables)
	queued := []string{first.createMember(aliceToken, "busybox", "node-a", "dag"), first.createMember(aliceToken, "busybox", "node-b", "dag")}
	loner := first.create(aliceToken, "busybox", "loner")
	passes.waitPasses(t, 2)
	for _, id := range append([]string{loner}, queued...) {
		if in := first.get(aliceToken, id); in["status"] != "pending" {
			t.Fatalf("%s under the deployment that created it: %v (%v)", id, in["status"], in["status_reason"])
		}
	}
	if d := deployment(t, tables); d.Generation != gen1.Generation || d.Version != gen1.Version {
		t.Fatalf("the same deployment's passes wrote the record again: %+v, then %+v", gen1, d)
	}
	first.stop()

	second := start(t, setup{container: keys, scheduleEvery: time.Second, onInvoke: passes.onInvoke,
		dockerEndpoint: "unix:///nonexistent/berth-takeover-test-2.sock",
		params:         map[string]string{"TablePrefix": first.params["TablePrefix"]}})
	for _, id := range queued {
		in := second.wait(aliceToken, id, "failed", 2*time.Minute)
		if reason, _ := in["status_reason"].(string); !strings.HasPrefix(reason, manager.InterruptedReason) {
			t.Fatalf("interrupted member %s: %q", id, reason)
		}
	}
	// The pass that failed them settles the record after it has failed
	// every member: read it once that pass has ended.
	passes.waitPasses(t, 1)
	gen2 := deployment(t, tables)
	if gen2.Generation == gen1.Generation || !gen2.Settled {
		t.Fatalf("the second deployment's record: %+v (the first's: %+v)", gen2, gen1)
	}
	fresh := second.createMember(aliceToken, "busybox", "node-c", "dag")
	passes.waitPasses(t, 2)
	for _, id := range []string{loner, fresh} {
		if in := second.get(aliceToken, id); in["status"] != "pending" {
			t.Fatalf("%s, not the last deployment's member: %v (%v)", id, in["status"], in["status_reason"])
		}
		if n := second.eventCount(aliceToken, id, "ContainerFailed"); n != 0 {
			t.Fatalf("%s has %d ContainerFailed events, want 0", id, n)
		}
	}
	for _, id := range queued {
		if n := second.eventCount(aliceToken, id, "ContainerFailed"); n != 1 {
			t.Fatalf("%s has %d ContainerFailed events, want 1", id, n)
		}
	}
	if d := deployment(t, tables); d.Version != gen2.Version {
		t.Fatalf("later passes wrote the record again: %+v, then %+v", gen2, d)
	}
}

// deployment reads the stack's deployment record; it must exist.
func deployment(t *testing.T, s *dynamostore.Store) store.Deployment {
	t.Helper()
	d, err := s.GetDeployment(context.Background())
	if err != nil || d.Version == 0 {
		t.Fatalf("deployment record: %+v %v", d, err)
	}
	return d
}
