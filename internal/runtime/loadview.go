package runtime

import (
	"sync"
	"time"
)

// DefaultViewTTL is how long placement reuses one listing of its nodes'
// loads (Placer.ViewTTL): creates within it cost no listing, and what they
// place is counted on top of it (loadView).
const DefaultViewTTL = time.Second

// DefaultPlaceHold is how long a place that Place chose keeps counting
// while no Create has taken it up (Placer.PlaceHold): a worker that lost
// its claim never makes the object, and its place must not count for good.
const DefaultPlaceHold = time.Minute

const (
	// viewFanout is how many nodes one refresh lists at once: a goroutine
	// and a connection per node, at a thousand hosts, would only queue on
	// the process's own sockets.
	viewFanout = 64
	// viewTimeout bounds one refresh: a node that has not answered by then
	// counts as down until the next refresh, rather than holding every
	// create that waits for this one.
	viewTimeout = 10 * time.Second
)

// loadView is a Placer's view of its nodes' loads, shared by every
// placement of the process: the active objects of one listing of every
// node, and on top of it the places this process chose that the listing
// may not have seen.
//
// A place counts from its choice until a listing that began after its
// Create returned has completed: that listing holds its object if it was
// made. A place Place chose is taken up by the Create of the same
// instance on the same node (take); one never taken up ends after
// PlaceHold. Objects that end between refreshes are seen at the next one:
// until then the view counts more than there is, never less, so no node
// is filled past its capacity by this process.
type loadView struct {
	mu sync.Mutex
	// last is the newest completed listing; nil before the first.
	last *listing
	// refreshing is closed when the refresh under way completes; nil when
	// none is.
	refreshing chan struct{}
	// placed counts places per node: len(places) split by node.
	placed map[string]int
	places map[*place]struct{}
	// chosen are the places Place chose, by instance, until a Create takes
	// them up.
	chosen map[string]*place
}

// listing is one listing of every node: the active objects of each node
// that answered, and the error of each that did not.
type listing struct {
	began  time.Time
	active map[string]int
	errs   map[string]error
}

// place is one place this process chose.
type place struct {
	node, instanceID string
	at               time.Time // chosen
	taken            bool      // a Create holds it, and ends it when it returns
	ended            time.Time // when that Create returned; zero until then
}

// add counts a new place on node (v.mu held).
func (v *loadView) add(node, instanceID string, at time.Time) *place {
	if v.places == nil {
		v.placed, v.places, v.chosen = map[string]int{}, map[*place]struct{}{}, map[string]*place{}
	}
	pl := &place{node: node, instanceID: instanceID, at: at}
	v.places[pl] = struct{}{}
	v.placed[node]++
	return pl
}

// drop stops counting pl (v.mu held).
func (v *loadView) drop(pl *place) {
	if _, ok := v.places[pl]; !ok {
		return
	}
	delete(v.places, pl)
	if v.placed[pl.node]--; v.placed[pl.node] == 0 {
		delete(v.placed, pl.node)
	}
	if v.chosen[pl.instanceID] == pl {
		delete(v.chosen, pl.instanceID)
	}
}

// end marks pl's Create returned at: it counts until a listing that began
// later. Only the first call counts.
func (v *loadView) end(pl *place, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if pl.ended.IsZero() {
		pl.ended = at
	}
}

// remember keeps pl, chosen by Place, for the Create of its instance to
// take up (v.mu held). A later Place of the same instance replaces it,
// and it ends after the hold.
func (v *loadView) remember(pl *place) {
	v.chosen[pl.instanceID] = pl
}

// take hands the place Place chose for instanceID on node to its Create;
// the returned func ends it. A place chosen on another node is dropped:
// the instance was pinned elsewhere (another worker's placement won the
// claim), so nothing is made there.
func (v *loadView) take(instanceID, node string, now func() time.Time) func() {
	v.mu.Lock()
	defer v.mu.Unlock()
	pl := v.chosen[instanceID]
	if pl == nil {
		return func() {}
	}
	delete(v.chosen, instanceID)
	if pl.node != node {
		v.drop(pl)
		return func() {}
	}
	pl.taken = true
	return func() { v.end(pl, now()) }
}

// prune drops the places the listing that began at began has seen, and
// the chosen ones never taken up within hold (v.mu held).
func (v *loadView) prune(began, now time.Time, hold time.Duration) {
	for pl := range v.places {
		switch {
		case !pl.ended.IsZero() && pl.ended.Before(began):
			v.drop(pl)
		case pl.ended.IsZero() && !pl.taken && now.Sub(pl.at) >= hold:
			v.drop(pl)
		}
	}
}
