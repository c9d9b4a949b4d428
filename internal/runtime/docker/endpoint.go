package docker

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// withEndpoints sets a running container's endpoints: each port the engine
// published, at the host's advertised address (advertise_address) and the
// host port the engine chose. A container that does not run has none, and
// neither has one whose network mode publishes nothing (none, host).
func withEndpoints(s runtime.State, advertised string, published func() []berth.Endpoint) runtime.State {
	if s.Phase != runtime.PhaseRunning && s.Phase != runtime.PhasePaused {
		return s
	}
	eps := published()
	for i := range eps {
		eps[i].Host, eps[i].Via = advertised, berth.EndpointViaHost
	}
	s.Endpoints = sortEndpoints(eps)
	return s
}

// inspectEndpoints reads the port bindings of an inspected container. The
// engine binds a port on every address family, which it reports as one
// binding each with the same host port: one endpoint per port and host
// port.
func inspectEndpoints(c container.InspectResponse) func() []berth.Endpoint {
	return func() []berth.Endpoint {
		if c.NetworkSettings == nil {
			return nil
		}
		var eps []berth.Endpoint
		for port, bindings := range c.NetworkSettings.Ports {
			for _, b := range bindings {
				hp, err := strconv.Atoi(b.HostPort)
				if err != nil || hp <= 0 {
					continue
				}
				eps = append(eps, berth.Endpoint{Port: int(port.Num()), Protocol: string(port.Proto()), HostPort: hp})
			}
		}
		return eps
	}
}

// summaryEndpoints reads the published ports of a listed container.
func summaryEndpoints(c container.Summary) func() []berth.Endpoint {
	return func() []berth.Endpoint {
		var eps []berth.Endpoint
		for _, p := range c.Ports {
			if p.PublicPort == 0 {
				continue // exposed, not published
			}
			proto := p.Type
			if proto == "" {
				proto = string(network.TCP)
			}
			eps = append(eps, berth.Endpoint{Port: int(p.PrivatePort), Protocol: proto, HostPort: int(p.PublicPort)})
		}
		return eps
	}
}

// sortEndpoints orders endpoints by port, protocol and host port, and drops
// repeats (the same binding on IPv4 and IPv6).
func sortEndpoints(eps []berth.Endpoint) []berth.Endpoint {
	slices.SortFunc(eps, func(a, b berth.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.HostPort, b.HostPort))
	})
	return slices.Compact(eps)
}
