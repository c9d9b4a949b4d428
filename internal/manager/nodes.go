package manager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// ErrNoRuntime answers a create while the deployment has no runtime at
// all: no Docker host and no Kubernetes cluster is configured (503). It is
// not the caller's doing and no retry mends it; an operator must configure
// one. Its message names what is missing and is safe to show anyone.
var ErrNoRuntime = errors.New("no runtime configured")

// Node is one place containers can run: a Docker host (docker.hosts) or a
// Kubernetes cluster (kubernetes.clusters), with the labels a template's
// scheduling.host_labels are matched against.
type Node struct {
	// Kind is container.RuntimeDocker or container.RuntimeKubernetes.
	Kind   string
	Name   string
	Labels map[string]string
}

// configKey is the configuration key that lists the nodes of a runtime kind.
func configKey(kind string) string {
	if kind == container.RuntimeKubernetes {
		return "kubernetes.clusters"
	}
	return "docker.hosts"
}

// nodeNoun is what a node of kind is called in messages.
func nodeNoun(kind string) string {
	if kind == container.RuntimeKubernetes {
		return "Kubernetes cluster"
	}
	return "Docker host"
}

// Runnable reports whether creates can run: nil when the deployment has a
// node of an allowed runtime (or when this process does not know the
// nodes), else an ErrNoRuntime naming what to configure. /readyz gives its
// message to anyone: it names configuration keys, never a host or a path.
func (m *Manager) Runnable() error {
	if !m.nodesKnown {
		return nil
	}
	for _, n := range m.nodes {
		if slices.Contains(m.runtimes, n.Kind) {
			return nil
		}
	}
	want := make([]string, len(m.runtimes))
	for i, k := range m.runtimes {
		want[i] = fmt.Sprintf("a %s (%s)", nodeNoun(k), configKey(k))
	}
	return fmt.Errorf("%w: container.allowed_runtimes is %s and no node is configured for any: configure %s",
		ErrNoRuntime, quoteList(m.runtimes), strings.Join(want, " or "))
}

// validateNodes refuses a template whose runtime has no node here, or whose
// literal scheduling.host_labels no node of its runtime carries: its
// creates could only fail. Labels with variables are checked at placement.
func (m *Manager) validateNodes(f *fields, t container.Template) {
	if !m.nodesKnown || !slices.Contains(m.runtimes, t.Runtime) {
		return
	}
	var mine []Node
	for _, n := range m.nodes {
		if n.Kind == t.Runtime {
			mine = append(mine, n)
		}
	}
	if len(mine) == 0 {
		f.add("runtime", "this deployment has no %s: %s is empty", nodeNoun(t.Runtime), configKey(t.Runtime))
		return
	}
	want := map[string]string{}
	for k, v := range t.Scheduling.HostLabels {
		if !strings.Contains(v, "$") {
			want[k] = v
		}
	}
	if len(want) == 0 {
		return
	}
	for _, n := range mine {
		if hasLabels(n.Labels, want) {
			return
		}
	}
	pairs := make([]string, 0, len(want))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		pairs = append(pairs, k+"="+want[k])
	}
	f.add("scheduling.host_labels", "no %s of this deployment has the labels %s (%s)",
		nodeNoun(t.Runtime), strings.Join(pairs, ", "), configKey(t.Runtime))
}

// hasLabels reports whether have holds every key of want with its value.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
