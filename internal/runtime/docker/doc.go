// Package docker is berth's runtime for Docker engines: one or many hosts
// from config (internal/config.DockerHost), reached through the Engine API
// client (github.com/moby/moby/client) with API version negotiation, since
// hosts may run engines as old as API 1.41.
//
// Each instance becomes one container named berth-<instance id>, labelled as
// internal/runtime.Labels says, on the host placement chose: among the hosts
// whose labels match the template's scheduling.host_labels and whose
// allowed_bind_roots admit its bind mounts, the one with the fewest active
// berth containers that still has capacity.
package docker
