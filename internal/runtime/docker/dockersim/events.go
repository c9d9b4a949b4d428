package dockersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
)

// subscriberBuffer is how many events a /events stream may fall behind
// before the host drops it (the client reconnects from its last event).
const subscriberBuffer = 4096

// subscriber is one open /events stream.
type subscriber struct {
	filter filters
	ch     chan events.Message
	gone   chan struct{} // closed when the host dropped it
}

// emit records a container event and sends it to the streams that want
// it. The caller holds h.mu, so events are logged and sent in order.
func (h *Host) emit(action events.Action, c *simContainer, extra ...string) {
	now := time.Now()
	m := events.Message{
		Type: events.ContainerEventType, Action: action, Scope: "local",
		Actor: events.Actor{ID: c.id, Attributes: c.attributes(extra...)},
		Time:  now.Unix(), TimeNano: now.UnixNano(),
	}
	if n := h.fleet.opts.EventLog; len(h.log) >= n {
		h.log = append(h.log[:0], h.log[len(h.log)-n+1:]...)
	}
	h.log = append(h.log, m)
	for s := range h.subs {
		if !s.filter.matchEvent(m) {
			continue
		}
		select {
		case s.ch <- m:
		default:
			// Too far behind: dropped, as an engine drops a slow reader.
			delete(h.subs, s)
			close(s.gone)
		}
	}
}

// events serves GET /events: the logged events from since on that match
// the filters, then new ones as they happen, until the client goes.
func (h *Host) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseFilters(q.Get("filters"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	since, err := parseSince(q.Get("since"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s := &subscriber{filter: f, ch: make(chan events.Message, subscriberBuffer), gone: make(chan struct{})}
	h.mu.Lock()
	var replay []events.Message
	for _, m := range h.log {
		if m.TimeNano >= since && f.matchEvent(m) {
			replay = append(replay, m)
		}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(m events.Message) bool {
		if err := enc.Encode(m); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if fl != nil {
		fl.Flush()
	}
	for _, m := range replay {
		if !send(m) {
			return
		}
	}
	for {
		select {
		case m := <-s.ch:
			if !send(m) {
				return
			}
		case <-s.gone:
			return
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		}
	}
}

// parseSince reads the engine's since forms, "seconds[.nanoseconds]" (what
// berth sends) or RFC 3339, as nanoseconds since the epoch; 0 when empty.
func parseSince(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixNano(), nil
	}
	secs, frac, _ := strings.Cut(v, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("since %q: want seconds[.nanoseconds]", v)
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		frac += strings.Repeat("0", 9-len(frac))
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, fmt.Errorf("since %q: want seconds[.nanoseconds]", v)
		}
	}
	return s*1e9 + ns, nil
}
