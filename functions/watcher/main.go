// Command watcher is berth's watcher Lambda function: the state loop's
// intake on AWS. Each schedule tick (EventBridge Scheduler's input, or an
// EventBridge rule's scheduled event) holds every Docker host's event
// stream and every Kubernetes cluster's Pod watch until shortly before the
// invocation's deadline, and feeds what they report to Manager.OnEvent
// through internal/monitor, the code `berth serve`'s state loop runs. The
// function's timeout is longer than the schedule's period, so successive
// invocations overlap and a container's exit is recorded within about a
// second on AWS too; each invocation also replays the Docker events of the
// span before it (runtime/docker's WatchSince), so a watcher that died is
// made up for by the next one. The reconciler stays the repair loop behind
// it. A fleet of more than one shard (internal/fleetshard) is fanned out
// instead: the tick sends one message per shard to the shard queue
// (fleet.watch_shard_queue_url), which the function consumes too, one
// shard's watch per record (internal/fleetfanout).
//
// Configuration: as the reconciler's (BERTH_* environment variables, and
// the config.yml document of docker.hosts and kubernetes.clusters from the
// secret named by BERTH_CONFIG_SECRET or the file named by
// BERTH_CONFIG_FILE).
package main

import "github.com/berth-io/berth/internal/lambdamain"

func main() {
	lambdamain.Run("watcher", setup, func(fn *function) any { return fn.fanout.Handle })
}
