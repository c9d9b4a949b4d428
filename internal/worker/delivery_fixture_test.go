package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// deliveryFixture is a store with a manager and a worker that deliver
// webhooks to receivers on 127.0.0.0/8, re-sending a failed delivery after
// 3 s, and, with the event bus, put events on a recording endpoint.
type deliveryFixture struct {
	ctx   context.Context
	s     store.Store
	quiet *slog.Logger
	guard webhook.Guard
	m     *manager.Manager
	w     *worker.Worker
	// bus records the event bus's requests; nil without the event bus.
	bus *busEndpoint
}

// newDeliveryFixture opens a store of b and builds the fixture on it,
// with the event bus when withBus; set, when not nil, adjusts the
// manager's options first.
func newDeliveryFixture(t *testing.T, b teststores.Backend, withBus bool, set func(*manager.Options)) deliveryFixture {
	t.Helper()
	f := deliveryFixture{ctx: context.Background(), s: b.Open(t, time.Now), quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	guard, err := webhook.NewGuard([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	f.guard = guard
	mo := manager.Options{Store: f.s, Runtimes: []string{"docker"}, Logger: f.quiet, Webhooks: guard, EventBus: withBus}
	if set != nil {
		set(&mo)
	}
	f.m = manager.New(mo)
	wo := worker.Options{Manager: f.m, Store: f.s, Logger: f.quiet,
		Webhooks: &webhook.Deliverer{Subscriptions: f.s, Guard: guard}, Backoff: func(int) time.Duration { return 3 * time.Second }}
	if withBus {
		f.bus = &busEndpoint{}
		wo.EventBus = newBusDeliverer(t, f.bus)
	}
	f.w = worker.New(wo)
	return f
}
