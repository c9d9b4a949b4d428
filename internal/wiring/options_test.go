package wiring

import (
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/reconcile"
)

// TestOptionsCarryTheConfig: every function and `berth serve` get the same
// options from one configuration, including the ones that once drifted
// (bind roots reached only the api function; orphan grace never reached
// the reconciler function).
func TestOptionsCarryTheConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Container.CreateQueueMaxPending = 7
	cfg.Container.CreateQueueMaxPendingPerOwner = 3
	cfg.Container.OrphanGrace = 42 * time.Second
	cfg.Container.OutboxSweepAfter = 9 * time.Second
	cfg.Container.CreateStartTimeout = 2 * time.Minute
	cfg.Container.MaxAttempts = 4
	cfg.Docker.Scope = "team-a"
	cfg.Docker.Hosts = []config.DockerHost{
		{Name: "h1", AllowedBindRoots: []string{"/srv/data", "/srv/cache"}},
		{Name: "h2", AllowedBindRoots: []string{"/srv/data"}},
	}
	mo := ManagerOptions(cfg, nil, nil, nil)
	if mo.MaxPending != 7 || mo.MaxPendingPerOwner != 3 || !slices.Equal(mo.BindRoots, []string{"/srv/data", "/srv/cache"}) ||
		mo.WorkspaceRoot != cfg.Container.WorkspaceRoot || !slices.Equal(mo.Runtimes, cfg.Container.AllowedRuntimes) {
		t.Errorf("ManagerOptions = %+v", mo)
	}
	wo := WorkerOptions(cfg, nil, nil, nil, nil, nil)
	if wo.CreateStartTimeout != 2*time.Minute || wo.MaxAttempts != 4 || wo.StopGrace != cfg.Container.StopGracePeriod || wo.CreateSlots != nil {
		t.Errorf("WorkerOptions = %+v", wo)
	}
	ro := ReconcileOptions(cfg, nil, nil, nil, nil, nil, nil)
	if ro.OrphanGrace != 42*time.Second || ro.OutboxStaleAfter != 9*time.Second || ro.Scope != "team-a" ||
		ro.Timeouts[fsm.Creating] != reconcile.TimeoutsFor(cfg.Container)[fsm.Creating] {
		t.Errorf("ReconcileOptions = %+v", ro)
	}
}

func TestQueueName(t *testing.T) {
	for in, want := range map[string]string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/berth-create": "berth-create",
		"http://127.0.0.1:9324/000000000000/berth-lifecycle/":           "berth-lifecycle",
		"arn:aws:sqs:eu-west-1:123456789012:berth-create":               "berth-create",
		"berth-create": "berth-create",
	} {
		if got := QueueName(in); got != want {
			t.Errorf("QueueName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueuesByName(t *testing.T) {
	cfg := config.Default()
	cfg.Queue.CreateQueueURL = "http://127.0.0.1:9324/000000000000/berth-create"
	cfg.Queue.LifecycleQueueURL = "http://127.0.0.1:9324/000000000000/berth-lifecycle"
	qs := QueuesByName(cfg, nil)
	if len(qs) != 2 || qs["berth-create"] == nil || qs["berth-lifecycle"] == nil {
		t.Errorf("QueuesByName = %v", qs)
	}
	cfg.Queue.NotifyQueueURL = "http://127.0.0.1:9324/000000000000/berth-notify"
	if qs := QueuesByName(cfg, nil); len(qs) != 3 || qs["berth-notify"] == nil {
		t.Errorf("QueuesByName with a notify queue = %v", qs)
	}
}

// TestQueuesNotify: the dispatcher's queues hold the notify queue only when
// one is configured (without it, deliveries go to the lifecycle queue).
func TestQueuesNotify(t *testing.T) {
	cfg := config.Default()
	cfg.Queue.CreateQueueURL = "http://127.0.0.1:9324/000000000000/berth-create"
	cfg.Queue.LifecycleQueueURL = "http://127.0.0.1:9324/000000000000/berth-lifecycle"
	if qs := Queues(cfg, nil); len(qs) != 2 || qs[outbox.NotifyQueue] != nil {
		t.Errorf("Queues without a notify queue = %v", qs)
	}
	cfg.Queue.NotifyQueueURL = "http://127.0.0.1:9324/000000000000/berth-notify"
	if qs := Queues(cfg, nil); len(qs) != 3 || qs[outbox.NotifyQueue] == nil {
		t.Errorf("Queues with a notify queue = %v", qs)
	}
}
