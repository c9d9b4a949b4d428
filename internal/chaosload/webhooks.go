package chaosload

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/notify/webhook"
)

// Receivers are a chaos run's webhook receivers, one per user's
// subscription: Hanging never answers (until the test ends), Flaky answers
// 503 until FlakyUp, Healthy answers at once. Each records when every
// change (instance and seq) first reached it.
type Receivers struct {
	Healthy, Hanging, Flaky *httptest.Server

	flakyDown atomic.Bool
	release   chan struct{}
	hung      atomic.Int32
	refused   atomic.Int32

	mu      sync.Mutex
	arrived map[*httptest.Server]map[changeKey]time.Time
}

type changeKey struct {
	instance string
	seq      int64
}

// NewReceivers starts the three receivers on loopback; the hanging one's
// requests are let go, and all closed, when t ends.
func NewReceivers(t testing.TB) *Receivers {
	h := &Receivers{release: make(chan struct{}), arrived: map[*httptest.Server]map[changeKey]time.Time{}}
	h.flakyDown.Store(true)
	h.Healthy = h.serve(func(http.ResponseWriter) bool { return true })
	h.Hanging = h.serve(func(http.ResponseWriter) bool {
		h.hung.Add(1)
		<-h.release
		return false
	})
	h.Flaky = h.serve(func(w http.ResponseWriter) bool {
		if h.flakyDown.Load() {
			h.refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return false
		}
		return true
	})
	t.Cleanup(func() {
		close(h.release)
		for _, s := range []*httptest.Server{h.Healthy, h.Hanging, h.Flaky} {
			s.Close()
		}
	})
	return h
}

// serve is a receiver that takes a change when answer says so.
func (h *Receivers) serve(answer func(http.ResponseWriter) bool) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		if !answer(w) {
			return
		}
		var p webhook.Payload
		if err := json.Unmarshal(body, &p); err != nil || p.Data.Instance.ID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		k := changeKey{p.Data.Instance.ID, p.Data.Seq}
		h.mu.Lock()
		if h.arrived[srv] == nil {
			h.arrived[srv] = map[changeKey]time.Time{}
		}
		if _, dup := h.arrived[srv][k]; !dup {
			h.arrived[srv][k] = at
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return srv
}

// FlakyUp ends the flaky receiver's outage.
func (h *Receivers) FlakyUp() { h.flakyDown.Store(false) }

// Counts are how many requests the hanging receiver holds and the flaky
// one refused.
func (h *Receivers) Counts() (hung, refused int) { return int(h.hung.Load()), int(h.refused.Load()) }

// Subscribe subscribes each receiver to every change of one user's
// instances: the first user's to Hanging, the second's to Healthy, the
// third's to Flaky (the webhooks' isolation is per owner).
func (r *Run) Subscribe(h *Receivers) error {
	if len(r.o.Users) < 3 {
		return fmt.Errorf("the receivers need 3 users, the run has %d", len(r.o.Users))
	}
	for i, srv := range []*httptest.Server{h.Hanging, h.Healthy, h.Flaky} {
		u := r.o.Users[i]
		a, err := r.o.Call(http.MethodPost, "/api/webhooks", u.Token, map[string]any{"url": srv.URL + "/hooks"}, "")
		if err != nil {
			return fmt.Errorf("subscribing %s's receiver: %w", u.Name, err)
		}
		if a.Status != http.StatusCreated {
			return fmt.Errorf("subscribing %s's receiver: %d %s", u.Name, a.Status, a.Body)
		}
	}
	return nil
}

// Delivered is what DeliveriesOf found of one user's changes at their
// receiver.
type Delivered struct {
	// Changes is the number of status changes of the user's instances;
	// Missing those that never arrived within the wait.
	Changes int
	Missing []string
	// Lags are, for each change that arrived, how long after the change
	// it first did, sorted.
	Lags []time.Duration
}

// Max is the longest lag.
func (d Delivered) Max() time.Duration {
	if len(d.Lags) == 0 {
		return 0
	}
	return d.Lags[len(d.Lags)-1]
}

// DeliveriesOf checks that every status change (an event whose status
// differs from the one before it) of the instances of the run's user
// (index into Options.Users) reached srv, waiting up to wait for the
// last ones.
func (r *Run) DeliveriesOf(h *Receivers, srv *httptest.Server, user int, wait time.Duration) (Delivered, error) {
	name := r.o.Users[user].Name
	var want []changeKey
	at := map[changeKey]time.Time{}
	r.mu.Lock()
	var ids []string
	for id, owner := range r.owners {
		if owner == name {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		evs, err := r.Events(id)
		if err != nil {
			return Delivered{}, err
		}
		for _, ev := range evs {
			if ev.To != ev.From {
				k := changeKey{id, ev.Seq}
				want, at[k] = append(want, k), ev.At
			}
		}
	}
	d := Delivered{Changes: len(want)}
	deadline := time.Now().Add(wait)
	for {
		h.mu.Lock()
		got := h.arrived[srv]
		d.Missing, d.Lags = d.Missing[:0], d.Lags[:0]
		for _, k := range want {
			if t, ok := got[k]; ok {
				d.Lags = append(d.Lags, max(0, t.Sub(at[k])))
			} else {
				d.Missing = append(d.Missing, fmt.Sprintf("%s seq %d", k.instance, k.seq))
			}
		}
		h.mu.Unlock()
		if len(d.Missing) == 0 || time.Now().After(deadline) {
			slices.Sort(d.Lags)
			return d, nil
		}
		time.Sleep(200 * time.Millisecond) // polling a receiver's record, bounded by deadline
	}
}

// CheckDeliveries checks the run's deliveries once it settled (Subscribe's
// receivers): every change of the second user's instances reached the
// healthy receiver, none more than bound after it, while the first user's
// receiver hung all along (the bound is below what waiting behind its
// deliveries costs: each holds a slot for the webhook client's 15 s); and
// every change of the third user's reached the flaky receiver once it was
// up. It returns each problem and a summary for the figures line.
func (r *Run) CheckDeliveries(h *Receivers, bound time.Duration) (problems []string, summary string, err error) {
	healthy, err := r.DeliveriesOf(h, h.Healthy, 1, 30*time.Second)
	if err != nil {
		return nil, "", err
	}
	flaky, err := r.DeliveriesOf(h, h.Flaky, 2, time.Minute)
	if err != nil {
		return nil, "", err
	}
	for _, m := range healthy.Missing {
		problems = append(problems, "the healthy receiver never got "+m)
	}
	if healthy.Max() > bound {
		problems = append(problems, fmt.Sprintf("the healthy receiver got a change %s after it (bound %s): lags %v", healthy.Max(), bound, healthy.Lags))
	}
	for _, m := range flaky.Missing {
		problems = append(problems, "the flaky receiver never got "+m+" once up")
	}
	hung, refused := h.Counts()
	p50 := time.Duration(0)
	if n := len(healthy.Lags); n > 0 {
		p50 = healthy.Lags[n/2]
	}
	summary = fmt.Sprintf("webhooks: healthy %d/%d changes (lag p50 %s, max %s), flaky %d/%d after %d refused, %d requests held by the hanging receiver",
		len(healthy.Lags), healthy.Changes, p50.Round(time.Millisecond), healthy.Max().Round(time.Millisecond),
		len(flaky.Lags), flaky.Changes, refused, hung)
	return problems, summary, nil
}
