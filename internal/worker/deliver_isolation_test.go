package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/manager/managertest"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// deliveryPool is `berth serve`'s notify consumers in small: n goroutines
// processing deliveries, re-sent ones pushed back after their delay.
type deliveryPool struct {
	ch chan queue.Delivery
	wg sync.WaitGroup
}

func startDeliveryPool(ctx context.Context, w *worker.Worker, n int) *deliveryPool {
	p := &deliveryPool{ch: make(chan queue.Delivery, 1024)}
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case d := <-p.ch:
					res := w.Process(ctx, d)
					if out := res.Requeue; out != nil && ctx.Err() == nil {
						time.AfterFunc(out.Delay, func() {
							p.ch <- queue.Delivery{MessageID: out.ID, Body: out.Body, ReceiveCount: 1, SentAt: time.Now()}
						})
					}
				}
			}
		}()
	}
	return p
}

// hangingReceiver answers nothing until the test ends (the deliverer's
// client gives up after webhook.DefaultTimeout); it counts the requests
// it holds at once.
type hangingReceiver struct {
	url            string
	held, peak     atomic.Int64
	total          atomic.Int64
	release        chan struct{}
	firstArrivedCh chan struct{}
	once           sync.Once
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	h := &hangingReceiver{release: make(chan struct{}), firstArrivedCh: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := h.held.Add(1)
		defer h.held.Add(-1)
		for p := h.peak.Load(); n > p; p = h.peak.Load() {
			if h.peak.CompareAndSwap(p, n) {
				break
			}
		}
		h.total.Add(1)
		h.once.Do(func() { close(h.firstArrivedCh) })
		select {
		case <-h.release:
		case <-req.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	h.url = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(h.release) })
	return h
}

// TestDeliveryIsolation: alice's 20 subscriptions to a receiver that
// hangs hold at most webhook.DefaultOwnerInFlight of a pool of 16
// delivery consumers (the rest of her deliveries are deferred, spending
// no retry), so bob's deliveries, sent while hers hang, arrive about as
// fast as on the idle pool measured first in the same test — not after
// her receiver's timeout, as with one shared pool. Both limiters: the
// process's own (`berth serve`) and the store's leases (the notify
// function).
func TestDeliveryIsolation(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		for _, lim := range []string{"local", "leases"} {
			t.Run(lim, func(t *testing.T) { testDeliveryIsolation(t, b, lim) })
		}
	})
}

func testDeliveryIsolation(t *testing.T, b teststores.Backend, lim string) {
	f := newDeliveryFixture(t, b, false, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var limiter webhook.Limiter = &webhook.LocalLimiter{}
	if lim == "leases" {
		limiter = &webhook.StoreLimiter{Leases: f.s}
	}
	w := worker.New(worker.Options{Manager: f.m, Store: f.s, Logger: f.quiet,
		Webhooks: &webhook.Deliverer{Subscriptions: f.s, Guard: f.guard, Limiter: limiter}})
	pool := startDeliveryPool(ctx, w, 16)
	defer pool.wg.Wait()
	defer cancel()

	alice, bob := identity.Caller{User: "alice"}, identity.Caller{User: "bob"}
	hang := newHangingReceiver(t)
	for range 20 {
		if _, err := f.m.CreateWebhook(ctx, alice, manager.WebhookRequest{URL: hang.url + "/hook"}); err != nil {
			t.Fatal(err)
		}
	}
	rcv := webhooktest.NewReceiver(t)
	sub, err := f.m.CreateWebhook(ctx, bob, manager.WebhookRequest{URL: rcv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	rcv.SetSecret("", sub.Secret)
	clock := storetest.NewClock()
	sent := map[string]bool{}
	// changes moves a new instance of c through three changes and sends
	// their new deliveries to the pool, returning how many it sent.
	changes := func(c identity.Caller) int {
		inst, err := f.s.CreateInstance(ctx, storetest.NewCreate(clock, c.User))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, to := range []fsm.Status{fsm.Creating, fsm.Running, fsm.StopPending} {
			managertest.Move(t, f.m, c, inst.ID, to)
			for _, it := range deliveriesOf(t, f.s, inst.ID) {
				if !sent[it.ID] {
					sent[it.ID] = true
					n++
					pool.ch <- deliveryOf(t, it)
				}
			}
		}
		return n
	}
	// bobs sends bob's three changes and waits until they all arrived.
	bobs := func() time.Duration {
		start, before := time.Now(), len(rcv.Received())
		want := before + changes(bob)
		for len(rcv.Received()) < want {
			select {
			case <-rcv.Arrived():
			case <-time.After(2 * webhook.DefaultTimeout):
				t.Fatalf("bob's deliveries: %d of %d arrived", len(rcv.Received())-before, want-before)
			}
		}
		return time.Since(start)
	}
	baseline := bobs()

	if n := changes(alice); n != 60 {
		t.Fatalf("alice's changes made %d deliveries; want 3 × 20", n)
	}
	<-hang.firstArrivedCh
	loaded := bobs()
	t.Logf("%s/%s: bob's 3 deliveries took %v on the idle pool and %v while alice's receiver hangs (%.1f×); alice's receiver held %d at most (%d requests)",
		b.Name, lim, baseline, loaded, float64(loaded)/float64(baseline), hang.peak.Load(), hang.total.Load())
	if peak := hang.peak.Load(); peak > webhook.DefaultOwnerInFlight {
		t.Errorf("alice's receiver held %d deliveries at once; her share is %d", peak, webhook.DefaultOwnerInFlight)
	}
	// Without the share, bob waits for alice's receiver to time out
	// (webhook.DefaultTimeout, 15 s) behind a full pool.
	if loaded > webhook.DefaultTimeout/5 && loaded > 10*baseline {
		t.Errorf("bob's deliveries took %v while alice's receiver hangs (idle: %v)", loaded, baseline)
	}
	// Alice's deferred deliveries spent no retry.
	items, err := f.s.ListUndispatched(ctx, time.Now().Add(time.Hour), 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Op == container.OpDeliver && it.Attempts > 1 {
			t.Errorf("delivery %s: %d attempts while alice's receiver hangs once", it.ID, it.Attempts)
		}
	}
}
