package runtime

import (
	"maps"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Candidate is a node placement may choose: a Docker host or a Kubernetes
// cluster.
type Candidate interface {
	// NodeName names the node in errors and in the view of loads.
	NodeName() string
	// NodeCapacity is how many active objects it takes; 0 is unbounded.
	NodeCapacity() int
}

// Choice is a placement's answer: a node, and either the object an earlier
// attempt already made there or the place counted for the object to make,
// which Release ends once it is made (or not).
type Choice[N Candidate, O any] struct {
	Node     N
	Existing *O
	Release  func()
}

// MayHaveObject reports whether an earlier attempt may have made inst's
// object without its node being recorded, so that placing it must first
// look for that object. A pending instance is a first attempt: a create's
// claim moves it to creating, recording the node placement chose, before
// any Create, and nothing moves an instance back to pending. An instance
// past pending without a node (one claimed before the claim recorded the
// node, or a caller that does not say: no status) may have one.
func MayHaveObject(inst container.Instance) bool {
	return inst.RuntimeNodeName == "" && inst.Status != fsm.Pending
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
