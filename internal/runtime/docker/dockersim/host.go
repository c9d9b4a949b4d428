package dockersim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/types/events"
)

// Host is one simulated Docker engine.
type Host struct {
	fleet *Fleet
	name  string
	addr  string // 127.0.0.1:port, kept across Down

	srvMu  sync.Mutex
	srv    *http.Server // nil while down
	own    *Faults      // the host's own faults; nil: the fleet's
	closed chan struct{}
	shut   bool

	calls atomic.Int64

	mu         sync.Mutex
	containers map[string]*simContainer // by id
	names      map[string]*simContainer // by name (no leading "/")
	images     map[string]string        // reference → image id
	log        []events.Message         // the last EventLog events, oldest first
	subs       map[*subscriber]struct{}
	nextPort   int
}

func newHost(f *Fleet, name string) (*Host, error) {
	h := &Host{
		fleet: f, name: name, closed: make(chan struct{}),
		containers: map[string]*simContainer{}, names: map[string]*simContainer{},
		images: map[string]string{}, subs: map[*subscriber]struct{}{}, nextPort: 32768,
	}
	for _, img := range f.opts.Images {
		h.images[normalizeImage(img)] = newID()
	}
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	if err := h.applyDown(); err != nil {
		return nil, err
	}
	return h, nil
}

// Name is the host's name (its docker.hosts name).
func (h *Host) Name() string { return h.name }

// Endpoint is the host's tcp://127.0.0.1:PORT.
func (h *Host) Endpoint() string { return "tcp://" + h.addr }

// Calls is how many calls the host has received (hung ones included).
func (h *Host) Calls() int64 { return h.calls.Load() }

// Streams is how many /events streams the host has open: a watcher
// waits on it to know every stream is subscribed.
func (h *Host) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Faults are the host's faults in force: its own, else the fleet's.
func (h *Host) Faults() Faults {
	h.srvMu.Lock()
	own := h.own
	h.srvMu.Unlock()
	if own != nil {
		return *own
	}
	return h.fleet.fleetFaults()
}

// SetFaults gives the host faults of its own (nil: the fleet's again).
// Down takes effect at once: the listener closes, or opens again on the
// same port.
func (h *Host) SetFaults(f *Faults) error {
	h.srvMu.Lock()
	if f != nil {
		c := *f
		f = &c
	}
	h.own = f
	h.srvMu.Unlock()
	return h.applyDown()
}

// applyDown closes or reopens the listener as the faults in force say.
func (h *Host) applyDown() error {
	down := h.Faults().Down
	h.srvMu.Lock()
	defer h.srvMu.Unlock()
	switch {
	case h.shut:
		return nil
	case down && h.srv != nil:
		err := h.srv.Close()
		h.srv = nil
		return err
	case !down && h.srv == nil:
		ln, err := listen(h.addr)
		if err != nil {
			return fmt.Errorf("host %s up again on %s: %w", h.name, h.addr, err)
		}
		h.serveLocked(ln)
	}
	return nil
}

// listen listens on a loopback address; the fleet's lifetime, not a
// context, bounds the listener.
func listen(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "tcp", addr)
}

func (h *Host) serve(ln net.Listener) {
	h.srvMu.Lock()
	defer h.srvMu.Unlock()
	h.serveLocked(ln)
}

func (h *Host) serveLocked(ln net.Listener) {
	srv := &http.Server{Handler: h.withFaults(h.router()), ReadHeaderTimeout: 30 * time.Second}
	h.srv = srv
	// Serve ends with ErrServerClosed when the host goes down or closes.
	go func() { _ = srv.Serve(ln) }()
}

// close stops the host for good.
func (h *Host) close() error {
	h.srvMu.Lock()
	if h.shut {
		h.srvMu.Unlock()
		return nil
	}
	h.shut = true
	close(h.closed)
	srv := h.srv
	h.srv = nil
	h.srvMu.Unlock()
	h.mu.Lock()
	for _, c := range h.containers {
		c.stopTimer()
	}
	h.mu.Unlock()
	if srv != nil {
		return srv.Close()
	}
	return nil
}
