package berthstack

import (
	"testing"
)

// TestShardQueues: FleetShards reaches the reconciler and the watcher as BERTH_FLEET_SHARDS;
// each has a shard queue of its own (its URL in its environment alone), kept two periods with
// no dead-letter queue and visible again no sooner than the function's timeout, consumed by
// that function one shard per invocation with failures per record; each role may send to,
// consume and re-time its own shard queue only.
func TestShardQueues(t *testing.T) {
	s := synth(t, withProps(func(p *Props) { p.FleetShards = 4 }))
	loops := []struct {
		name          string
		fn            string
		queue         string
		urlVar, other string
		timeout       float64
	}{
		{"reconciler", s.logicalID(t, s.stack.Reconciler.Function), s.logicalID(t, s.stack.Reconciler.ShardQueue),
			envReconcileShardURL, envWatchShardURL, ReconcilerTimeout.Seconds()},
		{"watcher", s.logicalID(t, s.stack.Watcher.Function), s.logicalID(t, s.stack.Watcher.ShardQueue),
			envWatchShardURL, envReconcileShardURL, WatcherTimeout.Seconds()},
	}
	for _, l := range loops {
		p := s.props(t, l.fn)
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env[envFleetShards] != "4" || env[l.other] != nil {
			t.Errorf("%s: %s = %v, %s = %v; want 4 and none", l.name, envFleetShards, env[envFleetShards], l.other, env[l.other])
		}
		if u, _ := env[l.urlVar].(map[string]any); u["Ref"] != l.queue {
			t.Errorf("%s: %s = %v, want its shard queue %s", l.name, l.urlVar, env[l.urlVar], l.queue)
		}
		if p["ReservedConcurrentExecutions"] != nil {
			t.Errorf("%s reserves %v with 4 shards", l.name, p["ReservedConcurrentExecutions"])
		}
		q := s.props(t, l.queue)
		if num(q["VisibilityTimeout"]) < l.timeout || num(q["MessageRetentionPeriod"]) != ShardQueueRetention.Seconds() || q["RedrivePolicy"] != nil {
			t.Errorf("%s's shard queue %v: want visibility ≥ %v s, %v retention, no dead-letter queue", l.name, q, l.timeout, ShardQueueRetention)
		}
		s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
			"FunctionName":          ref(l.fn),
			"EventSourceArn":        getAtt(l.queue, "Arn"),
			"BatchSize":             ShardBatchSize,
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		})
	}
}
