// Package dockersim is a simulated Docker fleet: many Docker Engine API
// hosts served from one process, each its own listener on 127.0.0.1, so a
// berth configuration's docker.hosts can name a thousand of them
// (tcp://127.0.0.1:PORT) on one machine.
//
// It speaks the subset of the Engine API berth's docker runtime calls:
// _ping (version negotiation), version, info, containers (create, start,
// stop, kill, remove, inspect, list with filters, pause, unpause, stats,
// logs), the /events stream (since, filters), images (inspect, pull, list)
// and volume inspect. Containers are state in memory, not processes: a
// container "runs" for a time (its env BERTH_SIM_RUN_FOR, else the fleet's
// default, else until stopped) and then exits with a code (its env
// BERTH_SIM_EXIT_CODE), with the events an engine emits (create, start,
// kill, die, stop, pause, unpause, destroy) carrying its labels.
//
// Faults are configurable for the fleet and per host: a latency added to
// every call, a host that hangs (accepts, never answers), a host that is
// down (refuses connections), and a rate of calls answered with a server
// error.
//
// It is a load model only: it runs no processes, so it has no output
// (logs are empty), no exec (answered 501) and published ports nothing
// listens on. Functional tests use real engines; the runtime conformance
// suite runs against this package beside the real engine's run
// (internal/runtime/docker's TestSimConformance) to keep it honest.
package dockersim
