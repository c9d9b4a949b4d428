package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Load is what one node's listing says for placing an instance: how many of
// berth's objects hold a place there, and the instance's own object if an
// earlier attempt already made it.
type Load[O any] struct {
	Active   int
	Existing *O
	Err      error
}

// Candidate is a node placement may choose: a Docker host or a Kubernetes
// cluster.
type Candidate interface {
	// NodeName names the node in errors and reservations.
	NodeName() string
	// NodeCapacity is how many active objects it takes; 0 is unbounded.
	NodeCapacity() int
}

// Choice is Choose's answer: a node, and either the object an earlier
// attempt already made there or a reservation to release once created.
type Choice[N Candidate, O any] struct {
	Node     N
	Existing *O
	Release  func()
}

// Reservations counts places chosen but not yet created, per node, so that
// creates placed at the same time do not all take the same free place. The
// zero value is ready to use.
type Reservations struct {
	mu sync.Mutex
	n  map[string]int
}

// Choose is the one placement rule of every runtime. It asks load of every
// candidate at once, which gives both the load and any object an earlier
// attempt made for this instance (adopted rather than made twice), then
// takes the least-loaded node with room and reserves a place there. kind
// names the nodes in errors ("docker host"). No node answering, or every
// one full, is ErrUnavailable: a retry may find room.
//
// load is called with count false when there is nothing to compare (one
// candidate, no capacity): it then need only look for this instance's
// object, which also tells that the node answers, instead of listing every
// object of the node. Listing costs O(objects) per create, which at
// thousands of Pods or containers would dominate a create.
func Choose[N Candidate, O any](ctx context.Context, res *Reservations, instanceID, kind string, cands []N,
	load func(ctx context.Context, node N, count bool) Load[O]) (Choice[N, O], error) {
	count := len(cands) != 1 || cands[0].NodeCapacity() > 0
	loads := make([]Load[O], len(cands))
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Go(func() { loads[i] = load(ctx, c, count) })
	}
	wg.Wait()

	var errs []error
	for i, l := range loads {
		if l.Existing != nil {
			return Choice[N, O]{Node: cands[i], Existing: l.Existing, Release: func() {}}, nil
		}
		if l.Err != nil {
			errs = append(errs, l.Err)
		}
	}

	res.mu.Lock()
	defer res.mu.Unlock()
	if res.n == nil {
		res.n = map[string]int{}
	}
	best, bestLoad := -1, 0
	for i, c := range cands {
		if loads[i].Err != nil {
			continue
		}
		n := loads[i].Active + res.n[c.NodeName()]
		if capacity := c.NodeCapacity(); capacity > 0 && n >= capacity {
			continue
		}
		if best < 0 || n < bestLoad {
			best, bestLoad = i, n
		}
	}
	if best < 0 {
		if len(errs) == len(cands) {
			return Choice[N, O]{}, NewError(ErrUnavailable, "place", instanceID, "",
				fmt.Errorf("no matching %s answered: %w", kind, errors.Join(errs...)))
		}
		return Choice[N, O]{}, Errorf(ErrUnavailable, "place", instanceID, "",
			"every matching %s that answered is full (%s)", kind, nodeNames(cands))
	}
	name := cands[best].NodeName()
	res.n[name]++
	var once sync.Once
	return Choice[N, O]{Node: cands[best], Release: func() {
		once.Do(func() {
			res.mu.Lock()
			res.n[name]--
			res.mu.Unlock()
		})
	}}, nil
}

func nodeNames[N Candidate](cs []N) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.NodeName()
	}
	return strings.Join(names, ", ")
}

// HasLabels reports whether have holds every pair of want.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SortedPairs renders a label map as sorted k=v pairs, for messages.
func SortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
