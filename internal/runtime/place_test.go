package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

type node struct {
	name     string
	capacity int
}

func (n node) NodeName() string              { return n.name }
func (n node) NodeCapacity() int             { return n.capacity }
func (n node) NodeLabels() map[string]string { return nil }
func (n node) NodeRoots() []string           { return nil }
func (n node) String() string                { return n.name }
func nodesOf(caps map[string]int, names ...string) []node {
	out := make([]node, len(names))
	for i, name := range names {
		out[i] = node{name, caps[name]}
	}
	return out
}

// fleet is what the nodes hold: active objects per node (some made by no
// instance of the test), each instance's object, which nodes answer, and
// how often each was counted or searched.
type fleet struct {
	mu      sync.Mutex
	active  map[string]int
	objects map[string]string // instance id → node
	down    map[string]bool
	counts  int
	finds   int
	// gate, when set, holds each Count after it has read its node (and
	// said so on entered) until it is closed: a listing that has not seen
	// what is made meanwhile.
	gate    chan struct{}
	entered chan string
}

func newFleet(active map[string]int) *fleet {
	f := &fleet{active: map[string]int{}, objects: map[string]string{}, down: map[string]bool{}}
	for n, c := range active {
		f.active[n] = c
	}
	return f
}

func (f *fleet) count(_ context.Context, n node) (int, error) {
	f.mu.Lock()
	f.counts++
	c, down, gate, entered := f.active[n.name], f.down[n.name], f.gate, f.entered
	f.mu.Unlock()
	if gate != nil {
		entered <- n.name
		<-gate
	}
	if down {
		return 0, fmt.Errorf("node %s: connection refused", n.name)
	}
	return c, nil
}

func (f *fleet) find(_ context.Context, n node, id string) (*string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finds++
	if f.down[n.name] {
		return nil, fmt.Errorf("node %s: connection refused", n.name)
	}
	if f.objects[id] == n.name {
		obj := "object of " + id
		return &obj, nil
	}
	return nil, nil
}

// make is a Create's object appearing on node.
func (f *fleet) make(id, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[id] = node
	f.active[node]++
}

func (f *fleet) calls() (counts, finds int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts, f.finds
}

// clock is the view's time, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newPlacer(nodes []node, f *fleet, now func() time.Time) *runtime.Placer[node, string] {
	return &runtime.Placer[node, string]{
		Kind:  "test node",
		Nodes: nodes,
		Named: func(_, id, recorded string) (node, error) {
			for _, n := range nodes {
				if n.name == recorded {
					return n, nil
				}
			}
			return node{}, runtime.Errorf(runtime.ErrInvalid, "place", id, recorded, "no such node")
		},
		Count: f.count,
		Find:  f.find,
		Now:   now,
	}
}

func pending() container.Instance {
	return container.Instance{ID: container.NewID(), Status: fsm.Pending}
}

// createOn is the worker's create after Place chose node: the instance
// claimed there, its Create (pinned) making the object.
func createOn(p *runtime.Placer[node, string], f *fleet, inst container.Instance, node string) error {
	inst.Status, inst.RuntimeNodeName = fsm.Creating, node
	c, err := p.ForCreate(context.Background(), inst)
	if err != nil || c.Node.name != node || c.Existing != nil {
		return fmt.Errorf("create pinned to %s: %v, %w", node, c.Node, err)
	}
	f.make(inst.ID, node)
	c.Release()
	return nil
}

// TestPlacementView: placement reads loads from one listing of every node,
// reused for the TTL, and counts on top of it what it placed since: each
// step moves the clock, changes which nodes answer, places one pending
// instance and, with made, creates it where it was placed.
func TestPlacementView(t *testing.T) {
	type step struct {
		advance  time.Duration
		down, up string
		made     bool
		want     string // "" expects ErrUnavailable
		listings int    // listings of every node so far
		finds    int    // lookups of an instance's object so far
	}
	ttl, hold := runtime.DefaultViewTTL, runtime.DefaultPlaceHold
	cases := []struct {
		name   string
		nodes  []string
		caps   map[string]int
		active map[string]int
		steps  []step
	}{
		{name: "reused within the TTL", nodes: []string{"a", "b"}, steps: []step{
			{want: "a", listings: 1}, {advance: ttl / 2, want: "b", listings: 1}, {advance: ttl/2 - 1, want: "a", listings: 1},
		}},
		{name: "refreshed after the TTL", nodes: []string{"a", "b"}, active: map[string]int{"b": 5}, steps: []step{
			{want: "a", listings: 1}, {want: "a", listings: 1}, {advance: ttl, want: "a", listings: 2},
		}},
		{name: "places since the listing count", nodes: []string{"a", "b"}, active: map[string]int{"a": 1, "b": 3}, steps: []step{
			{want: "a", listings: 1}, {want: "a", listings: 1}, {want: "a", listings: 1}, {want: "b", listings: 1},
			{want: "a", listings: 1}, {want: "b", listings: 1},
		}},
		{name: "a made place is counted once the listing holds it", nodes: []string{"a", "b"}, caps: map[string]int{"a": 2, "b": 2},
			steps: []step{
				{made: true, want: "a", listings: 1}, {made: true, want: "b", listings: 1},
				{advance: ttl, made: true, want: "a", listings: 2}, {made: true, want: "b", listings: 2},
				{want: "", listings: 2}, {advance: ttl, want: "", listings: 3},
			}},
		{name: "a node down then back", nodes: []string{"a", "b"}, steps: []step{
			{down: "a", want: "b", listings: 1}, {want: "b", listings: 1},
			{up: "a", want: "b", listings: 1}, // still down in the view until it is listed again
			// b holds the three places of the view before (not made, so
			// not in the listing, but counting until their hold ends).
			{advance: ttl, want: "a", listings: 2}, {want: "a", listings: 2}, {want: "a", listings: 2}, {want: "a", listings: 2},
			{want: "b", listings: 2},
		}},
		{name: "every node down", nodes: []string{"a", "b"}, steps: []step{
			{down: "a", want: "b", listings: 1}, {advance: ttl, down: "b", want: "", listings: 2},
			{advance: ttl, up: "b", want: "b", listings: 3},
		}},
		{name: "full until a place never taken up ends", nodes: []string{"a"}, caps: map[string]int{"a": 1}, steps: []step{
			{want: "a", listings: 1}, {want: "", listings: 1}, {advance: ttl, want: "", listings: 2},
			{advance: hold, want: "a", listings: 3},
		}},
		{name: "one node without capacity is not listed, only asked", nodes: []string{"a"}, steps: []step{
			{want: "a", finds: 1}, {advance: ttl, want: "a", finds: 2}, {down: "a", want: "", finds: 3},
			{up: "a", want: "a", finds: 4},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(c.active)
			clk := &clock{now: time.Unix(1_700_000_000, 0)}
			p := newPlacer(nodesOf(c.caps, c.nodes...), f, clk.Now)
			ctx := context.Background()
			for i, s := range c.steps {
				clk.advance(s.advance)
				f.mu.Lock()
				if s.down != "" {
					f.down[s.down] = true
				}
				if s.up != "" {
					delete(f.down, s.up)
				}
				f.mu.Unlock()
				inst := pending()
				got, err := p.Place(ctx, inst)
				switch {
				case s.want == "" && !runtime.IsUnavailable(err):
					t.Fatalf("step %d: placed on %q (%v), want unavailable", i, got, err)
				case s.want != "" && (err != nil || got != s.want):
					t.Fatalf("step %d: placed on %q (%v), want %s", i, got, err, s.want)
				}
				if counts, finds := f.calls(); counts != s.listings*len(c.nodes) || finds != s.finds {
					t.Fatalf("step %d: %d counts, %d finds; want %d listings of %d nodes and %d finds", i, counts, finds,
						s.listings, len(c.nodes), s.finds)
				}
				if s.made {
					if err := createOn(p, f, inst, got); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
		})
	}
}

// TestPlacementViewCountsWhatTheListingMissed: a place whose object is made
// while a listing runs (after it began) still counts once that listing
// is the view: the listing may not hold it, and a node at its capacity
// would otherwise take one more.
func TestPlacementViewCountsWhatTheListingMissed(t *testing.T) {
	f := newFleet(nil)
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	p := newPlacer(nodesOf(map[string]int{"a": 1, "b": 1}, "a", "b"), f, clk.Now)
	ctx := context.Background()
	x := pending()
	if got, err := p.Place(ctx, x); err != nil || got != "a" {
		t.Fatalf("place x: %q, %v", got, err)
	}
	x.Status, x.RuntimeNodeName = fsm.Creating, "a"
	c, err := p.ForCreate(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	// The next listing reads a before x's object is made there.
	clk.advance(runtime.DefaultViewTTL)
	gate, entered := make(chan struct{}), make(chan string)
	f.mu.Lock()
	f.gate, f.entered = gate, entered
	f.mu.Unlock()
	type placed struct {
		node string
		err  error
	}
	y := make(chan placed)
	go func() {
		node, err := p.Place(ctx, pending())
		y <- placed{node, err}
	}()
	for range 2 {
		select {
		case <-entered:
		case r := <-y:
			t.Fatalf("placed %+v before the listing answered", r)
		}
	}
	f.make(x.ID, "a")
	clk.advance(time.Millisecond)
	c.Release()
	close(gate)
	if r := <-y; r.err != nil || r.node != "b" {
		t.Fatalf("place y: %+v; want b (a holds x, which its listing missed)", r)
	}
	if node, err := p.Place(ctx, pending()); !runtime.IsUnavailable(err) {
		t.Fatalf("third place: %q, %v; want unavailable (both full)", node, err)
	}
	// The next listing holds x: a is full by the listing alone.
	f.mu.Lock()
	f.gate = nil
	f.mu.Unlock()
	clk.advance(runtime.DefaultViewTTL)
	if node, err := p.Place(ctx, pending()); !runtime.IsUnavailable(err) {
		t.Fatalf("after the next listing: %q, %v; want unavailable", node, err)
	}
}

// TestPlacementViewBurst: creates placed at once, while the view refreshes
// under them (a TTL of a millisecond), take no node past its capacity;
// the rest are unavailable. Placed one at a time afterwards, each after a
// listing that holds every object made, they fill every node exactly: the
// view counted nothing for good.
func TestPlacementViewBurst(t *testing.T) {
	const nodes, capacity, creates = 8, 5, 120
	names := make([]string, nodes)
	caps := map[string]int{}
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
		caps[names[i]] = capacity
	}
	f := newFleet(map[string]int{"n0": capacity - 1, "n1": 2})
	p := newPlacer(nodesOf(caps, names...), f, nil)
	p.ViewTTL = time.Millisecond
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for range creates {
		wg.Go(func() {
			inst := pending()
			got, err := p.Place(ctx, inst)
			if err == nil {
				err = createOn(p, f, inst, got)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case !runtime.IsUnavailable(err):
				t.Errorf("place: %v, want unavailable", err)
			}
		})
	}
	wg.Wait()
	f.mu.Lock()
	for _, n := range names {
		if f.active[n] > capacity {
			t.Errorf("node %s holds %d, past its capacity %d", n, f.active[n], capacity)
		}
	}
	f.mu.Unlock()
	if made == 0 {
		t.Fatal("nothing placed")
	}
	clk := &clock{now: time.Now().Add(time.Hour)}
	p.Now = clk.Now
	for {
		clk.advance(time.Millisecond)
		inst := pending()
		got, err := p.Place(ctx, inst)
		if runtime.IsUnavailable(err) {
			break
		}
		if err == nil {
			err = createOn(p, f, inst, got)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		if f.active[n] != capacity {
			t.Errorf("node %s holds %d after the top-up, want %d", n, f.active[n], capacity)
		}
	}
}

// TestPlacementAdoption: placement looks for an earlier attempt's object
// only where one may exist (runtime.MayHaveObject): not for a pending
// instance (never claimed, so never created), on every candidate for one
// past pending without a node, never for a pinned one.
func TestPlacementAdoption(t *testing.T) {
	cases := []struct {
		name      string
		status    fsm.Status
		node      string
		objectOn  string
		down      string
		wantNode  string
		wantObj   bool
		wantFinds int
		// wantPlace is where Place puts it next, when not wantNode: the
		// create's place counts on wantNode.
		wantPlace string
	}{
		{name: "pending: a first attempt", status: fsm.Pending, objectOn: "b", wantNode: "a"},
		{name: "no status: adopted", objectOn: "b", wantNode: "b", wantObj: true, wantFinds: 2},
		{name: "creating without a node: adopted", status: fsm.Creating, objectOn: "b", wantNode: "b", wantObj: true, wantFinds: 2},
		{name: "creating without a node, none made", status: fsm.Creating, wantNode: "a", wantFinds: 2, wantPlace: "b"},
		{name: "creating without a node, a node down", status: fsm.Creating, objectOn: "b", down: "a", wantNode: "b", wantObj: true,
			wantFinds: 2},
		{name: "pinned", status: fsm.Creating, node: "b", objectOn: "b", wantNode: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(nil)
			inst := container.Instance{ID: container.NewID(), Status: c.status, RuntimeNodeName: c.node}
			if c.objectOn != "" {
				f.make(inst.ID, c.objectOn)
			}
			if c.down != "" {
				f.down[c.down] = true
			}
			p := newPlacer(nodesOf(nil, "a", "b"), f, nil)
			got, err := p.ForCreate(context.Background(), inst)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.Node.name != c.wantNode || (got.Existing != nil) != c.wantObj {
				t.Errorf("chose %s (existing %v), want %s (existing %v)", got.Node.name, got.Existing != nil, c.wantNode, c.wantObj)
			}
			if _, finds := f.calls(); finds != c.wantFinds {
				t.Errorf("%d finds, want %d", finds, c.wantFinds)
			}
			want := c.wantNode
			if c.wantPlace != "" {
				want = c.wantPlace
			}
			node, err := p.Place(context.Background(), inst)
			if err != nil || node != want {
				t.Errorf("place: %q, %v; want %s", node, err, want)
			}
		})
	}
}

// TestPlacementAdoptionEveryNodeDown: an instance that may have an object,
// with no candidate answering the search, is unavailable: it is neither
// adopted nor made twice.
func TestPlacementAdoptionEveryNodeDown(t *testing.T) {
	f := newFleet(nil)
	f.down["a"], f.down["b"] = true, true
	p := newPlacer(nodesOf(nil, "a", "b"), f, nil)
	_, err := p.Place(context.Background(), container.Instance{ID: container.NewID(), Status: fsm.Creating})
	if !runtime.IsUnavailable(err) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("place: %v, want unavailable", err)
	}
}
