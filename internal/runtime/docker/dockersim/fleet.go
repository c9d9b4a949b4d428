package dockersim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/config"
)

// Defaults of Options.
const (
	// DefaultEventLog is how many events each host keeps for a /events
	// call's since to replay. Defaults to 256, as dockerd keeps.
	DefaultEventLog = 256
	// DefaultNamePrefix names the hosts: sim-0000, sim-0001, … Defaults to
	// "sim-".
	DefaultNamePrefix = "sim-"
)

// Options shape a Fleet.
type Options struct {
	// Hosts is how many hosts to serve (at least one).
	Hosts int
	// NamePrefix names host i NamePrefix + a four-digit i. Defaults to
	// DefaultNamePrefix.
	NamePrefix string
	// Faults apply to every host that has none of its own
	// (Host.SetFaults).
	Faults Faults
	// RunFor is how long a container runs before it exits by itself when
	// its env does not say (BERTH_SIM_RUN_FOR); 0: until stopped.
	RunFor time.Duration
	// PullTime is how long an image pull takes.
	PullTime time.Duration
	// Images are present on every host from the start; any other image is
	// pulled on demand (every pull succeeds).
	Images []string
	// EventLog is how many events a host keeps for replay. Defaults to
	// DefaultEventLog.
	EventLog int
}

// Fleet is a set of simulated hosts, each listening on its own loopback
// port.
type Fleet struct {
	opts  Options
	hosts []*Host

	mu     sync.Mutex
	faults Faults // the fleet's, for hosts without their own
}

// New starts a fleet of opts.Hosts hosts. Close stops it.
func New(opts Options) (*Fleet, error) {
	if opts.Hosts < 1 {
		return nil, errors.New("dockersim: want at least one host")
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = DefaultNamePrefix
	}
	if opts.EventLog <= 0 {
		opts.EventLog = DefaultEventLog
	}
	f := &Fleet{opts: opts, faults: opts.Faults}
	for i := range opts.Hosts {
		h, err := newHost(f, fmt.Sprintf("%s%04d", opts.NamePrefix, i))
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("dockersim: host %d: %w", i, err)
		}
		f.hosts = append(f.hosts, h)
	}
	return f, nil
}

// Hosts are the fleet's hosts in order.
func (f *Fleet) Hosts() []*Host { return f.hosts }

// Host is the host named name, or nil.
func (f *Fleet) Host(name string) *Host {
	for _, h := range f.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// DockerHosts are berth's docker.hosts entries for the fleet: each host's
// name and tcp://127.0.0.1:PORT endpoint, with template's other fields
// (network mode, capacity, labels, bind roots).
func (f *Fleet) DockerHosts(template config.DockerHost) []config.DockerHost {
	out := make([]config.DockerHost, len(f.hosts))
	for i, h := range f.hosts {
		hc := template
		hc.Name, hc.Endpoint = h.name, h.Endpoint()
		out[i] = hc
	}
	return out
}

// SetFaults sets the fleet's faults: every host without faults of its own
// has them from its next call (Down at once).
func (f *Fleet) SetFaults(fs Faults) error {
	f.mu.Lock()
	f.faults = fs
	f.mu.Unlock()
	var errs []error
	for _, h := range f.hosts {
		errs = append(errs, h.applyDown())
	}
	return errors.Join(errs...)
}

func (f *Fleet) fleetFaults() Faults {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faults
}

// Calls is how many calls the fleet's hosts have received.
func (f *Fleet) Calls() int64 {
	var n int64
	for _, h := range f.hosts {
		n += h.calls.Load()
	}
	return n
}

// Streams is how many /events streams the fleet's hosts have open.
func (f *Fleet) Streams() int {
	n := 0
	for _, h := range f.hosts {
		n += h.Streams()
	}
	return n
}

// Close stops every host: listeners, connections, event streams and the
// containers' timers.
func (f *Fleet) Close() error {
	var errs []error
	for _, h := range f.hosts {
		errs = append(errs, h.close())
	}
	return errors.Join(errs...)
}
