// Package kubernetes is berth's runtime for Kubernetes clusters, EKS
// included, on client-go. Each instance becomes one Pod named
// berth-<instance id, lower-cased> with restartPolicy Never, in the
// namespace configured for its cluster, labelled as internal/runtime.Labels
// says (values Kubernetes does not accept as label values, such as an
// e-mail owner, go to annotations of the same key instead).
//
// A Pod runs as soon as it exists, so Create makes it and Start only checks
// it; Stop deletes it with the stop grace period (berth's stopped instance
// has no Pod), and Start of an instance whose Pod is gone is answered with
// ErrNotFound, upon which the worker creates a new Pod from the frozen
// spec. Start of a Pod that ended by itself replaces it with a new Pod of
// the same spec.
//
// A cluster is a node in berth's sense: placement picks among the clusters
// whose labels match the template's scheduling.host_labels and that admit
// its host paths, the one with the fewest active berth Pods that still has
// capacity; the scheduler then picks the Kubernetes node, which the runtime
// reports as "<cluster>/<node>". berth needs only namespaced rights
// (docs/kubernetes.md gives the Role): Watch uses a namespaced,
// label-selected informer and List one call per cluster.
package kubernetes
