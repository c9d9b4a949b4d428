package config

import (
	"net/url"
	"time"

	"github.com/berth-io/berth/internal/fleetshard"
)

// Fleet is the `fleet:` section: how the AWS deployment's background
// loops (the reconciler, the watcher) split the fleet of nodes into
// shards, one invocation each (internal/fleetfanout). `berth serve` keeps
// its single loop and reads none of it.
type Fleet struct {
	// Shards is how many shards the loops split the fleet into
	// (fleetshard.Count): at most fleetshard.Buckets. Defaults to 0: one
	// shard per fleetshard.DefaultNodesPerShard configured nodes, so a
	// fleet of up to 100 nodes is one shard and each tick runs the whole
	// pass itself, as without sharding.
	Shards int `yaml:"shards"`
	// Period is the loops' schedule period: a shard message whose tick is
	// older than it is dropped, since the next tick's message covers its
	// shard. Defaults to DefaultFleetPeriod.
	Period time.Duration `yaml:"period"`
	// ReconcileShardQueueURL is the SQS queue the reconciler's tick sends
	// one message per shard to, and that the reconciler consumes. Empty:
	// the tick runs the whole pass whatever the shard count.
	ReconcileShardQueueURL string `yaml:"reconcile_shard_queue_url"`
	// WatchShardQueueURL is the same queue of the watcher's.
	WatchShardQueueURL string `yaml:"watch_shard_queue_url"`
}

// DefaultFleetPeriod is fleet.period's default: the period of both
// schedules in template.yaml and infra (rate(1 minute)), and the age past
// which Lambda drops a tick it could not run (their EventInvokeConfig).
const DefaultFleetPeriod = time.Minute

func (c *checker) fleet(f *Fleet) {
	if f.Shards < 0 || f.Shards > fleetshard.Buckets {
		c.fail("fleet.shards", "must be 0 (one shard per %d nodes) to %d (one per node bucket), got %d",
			fleetshard.DefaultNodesPerShard, fleetshard.Buckets, f.Shards)
	}
	c.positive("fleet.period", f.Period)
	for _, u := range []struct{ key, v string }{
		{"fleet.reconcile_shard_queue_url", f.ReconcileShardQueueURL},
		{"fleet.watch_shard_queue_url", f.WatchShardQueueURL},
	} {
		if u.v == "" {
			continue
		}
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			c.fail(u.key, "want an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got %q", u.v)
		}
	}
	if f.ReconcileShardQueueURL != "" && f.ReconcileShardQueueURL == f.WatchShardQueueURL {
		c.fail("fleet.watch_shard_queue_url", "must differ from fleet.reconcile_shard_queue_url: each loop consumes its own queue")
	}
}
