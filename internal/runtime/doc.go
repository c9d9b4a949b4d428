// Package runtime is the boundary between berth's workers and the systems
// that actually run containers: Docker engines (runtime/docker) and
// Kubernetes clusters (runtime/kubernetes). It declares the Runtime
// contract every implementation keeps, the typed errors callers branch on,
// the labels that mark berth's objects, the events a runtime reports, and
// the Resolver that picks a runtime and a node for an instance. It also
// holds the rules both runtimes share, so they cannot drift apart: the one
// placement rule (Placer) and which host paths a node admits
// (HostPathAllowed).
package runtime
