package worker_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/worker"
)

// benchConsumers is how many deliveries run at once, as `berth serve`'s
// notify consumers.
const benchConsumers = 16

// BenchmarkWebhookDelivery compares, in one run against one local
// receiver, deliveries made by the worker (outbox item and subscription
// read, signature, POST, bookkeeping, on the bolt store with its fsync per
// commit) with the same number of bare signed POSTs. Both report
// deliveries/s.
func BenchmarkWebhookDelivery(b *testing.B) {
	ctx := context.Background()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
	}))
	defer srv.Close()
	guard, _ := webhook.NewGuard([]string{"127.0.0.0/8"})
	client := webhook.NewClient(guard, 0)

	b.Run("worker", func(b *testing.B) {
		s := teststores.Bolt(b, time.Now)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		m := manager.New(manager.Options{Store: s, Runtimes: []string{"docker"}, Logger: quiet, Webhooks: guard})
		w := worker.New(worker.Options{Manager: m, Store: s, Logger: quiet,
			Webhooks: &webhook.Deliverer{Subscriptions: s, Guard: guard, Client: client}})
		sub, err := m.CreateWebhook(ctx, identity.Caller{User: "alice"}, manager.WebhookRequest{URL: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		inst, err := s.CreateInstance(ctx, storetest.NewCreate(storetest.NewClock(), "alice"))
		if err != nil {
			b.Fatal(err)
		}
		items := make([]container.OutboxItem, b.N)
		for i := range items {
			items[i] = container.OutboxItem{ID: container.NewID(), Op: container.OpDeliver,
				Delivery: &container.Delivery{WebhookID: sub.ID, From: fsm.Pending, To: fsm.Creating}}
		}
		if _, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Pending,
			To: fsm.Creating, Deliveries: items}); err != nil {
			b.Fatal(err)
		}
		deliveries := make(chan container.OutboxItem, len(items))
		for _, it := range items {
			it.InstanceID = inst.ID
			deliveries <- it
		}
		close(deliveries)
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range benchConsumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range deliveries {
					if res := w.Process(ctx, deliveryOf(b, it)); !res.Ack || res.Reason != "done" {
						b.Errorf("delivery %s: %+v", it.ID, res)
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	})

	b.Run("bare", func(b *testing.B) {
		secret := webhook.NewSecret()
		body := bytes.Repeat([]byte("x"), 700) // about a delivery's size
		var next atomic.Int64
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range benchConsumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(b.N) {
					id := "msg_" + strconv.FormatInt(next.Load(), 10)
					sig, _ := webhook.Sign(secret, id, time.Now(), body)
					req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
					req.Header.Set(webhook.HeaderID, id)
					req.Header.Set(webhook.HeaderSignature, sig)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	})
}
