package berth_test

import (
	"slices"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetshard"
)

// TestTemplateFleet: FleetShards (0 by default, at most fleetshard.Buckets)
// reaches the reconciler and the watcher as fleet.shards; each has a shard
// queue of its own (its URL in its environment alone), kept two periods
// without a dead-letter queue, visible again no sooner than the function's
// timeout (AWS's floor for an event source), consumed by that function one
// shard per invocation with failures per record; each role may send to,
// consume and re-time its own shard queue and no other's; the watcher's
// go with RuntimeWatcher.
func TestTemplateFleet(t *testing.T) {
	c := loadTemplate(t)
	p := c.param("FleetShards")
	if scalar(p["Default"]) != "0" || scalar(p["MinValue"]) != "0" || p["MaxValue"] != float64(fleetshard.Buckets) {
		t.Errorf("FleetShards %v: want default 0, 0..%d", p, fleetshard.Buckets)
	}
	period := config.Default().Fleet.Period.Seconds()
	loops := []struct{ fn, queue, mapping, urlVar, otherVar, cond string }{
		{"ReconcilerFunction", "ReconcileShardQueue", "ReconcileShardMapping",
			"BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL", "BERTH_FLEET_WATCH_SHARD_QUEUE_URL", ""},
		{"WatcherFunction", "WatchShardQueue", "WatchShardMapping",
			"BERTH_FLEET_WATCH_SHARD_QUEUE_URL", "BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL", "WatchRuntimes"},
	}
	for _, l := range loops {
		env := c.env(l.fn)
		if paramOf(env["BERTH_FLEET_SHARDS"]) != "FleetShards" {
			t.Errorf("%s: BERTH_FLEET_SHARDS %v, want FleetShards", l.fn, env["BERTH_FLEET_SHARDS"])
		}
		if paramOf(env[l.urlVar]) != l.queue || env[l.otherVar] != nil {
			t.Errorf("%s: %s %v, %s %v; want its own shard queue only", l.fn, l.urlVar, env[l.urlVar], l.otherVar, env[l.otherVar])
		}
		for _, id := range []string{l.queue, l.queue + "Policy", l.mapping} {
			if cond := asMap(asMap(c.doc["Resources"])[id])["Condition"]; scalar(cond) != l.cond && !(cond == nil && l.cond == "") {
				t.Errorf("%s: condition %v, want %q", id, cond, l.cond)
			}
		}
		q := c.resource(l.queue, "AWS::SQS::Queue")
		timeout, _ := c.resource(l.fn, "AWS::Serverless::Function")["Timeout"].(float64)
		if vis, _ := q["VisibilityTimeout"].(float64); vis < timeout {
			t.Errorf("%s: visibility %v s < %s's timeout %v s", l.queue, vis, l.fn, timeout)
		}
		if ret, _ := q["MessageRetentionPeriod"].(float64); ret < 60 || ret > 2*period || q["RedrivePolicy"] != nil || q["SqsManagedSseEnabled"] != true {
			t.Errorf("%s %v: want at most two periods' retention, no dead-letter queue, SSE", l.queue, q)
		}
		m := c.resource(l.mapping, "AWS::Lambda::EventSourceMapping")
		if src := getAtt(m["EventSourceArn"]); src == nil || src[0] != l.queue || paramOf(m["FunctionName"]) != l.fn ||
			m["BatchSize"] != 1.0 || !slices.Equal(asList(m["FunctionResponseTypes"]), []any{"ReportBatchItemFailures"}) {
			t.Errorf("%s %v: want %s → %s, batch size 1, ReportBatchItemFailures", l.mapping, m, l.queue, l.fn)
		}
		grants := map[string][]string{}
		for _, pol := range c.functionPolicies(l.fn) {
			p := asMap(pol)
			if ifs := asList(p["Fn::If"]); ifs != nil {
				p = asMap(ifs[1])
			}
			for _, st := range asList(p["Statement"]) {
				for _, a := range listOf(asMap(st)["Action"]) {
					for _, r := range listOf(asMap(st)["Resource"]) {
						grants[scalar(a)] = append(grants[scalar(a)], resourceName(r))
					}
				}
			}
		}
		for _, a := range []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"} {
			if !slices.Contains(grants[a], l.queue) {
				t.Errorf("%s: %s not on %s", l.fn, a, l.queue)
			}
		}
		for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"} {
			if got := grants[a]; !slices.Equal(got, []string{l.queue}) {
				t.Errorf("%s: %s on %v, want its shard queue only", l.fn, a, got)
			}
		}
		for _, other := range loops {
			if other.queue != l.queue && slices.Contains(grants["sqs:SendMessage"], other.queue) {
				t.Errorf("%s may send to %s", l.fn, other.queue)
			}
		}
	}
}
