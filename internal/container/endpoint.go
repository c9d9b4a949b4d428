package container

import (
	"net"
	"strconv"
)

// Endpoint is where one port a container publishes can be reached, filled
// in while the container runs and cleared when it stops.
type Endpoint struct {
	// Port is the container port, as the template publishes it.
	Port int `json:"port"`
	// Protocol is tcp, udp or sctp.
	Protocol string `json:"protocol"`
	// Host and HostPort are the address to connect to: on Docker, the
	// host's advertised address and the host port the engine chose; on
	// Kubernetes, the Pod's IP and the container port.
	Host     string `json:"host"`
	HostPort int    `json:"host_port"`
	// Via says what Host is: EndpointViaHost or EndpointViaPod.
	Via string `json:"via"`
}

// The kinds of Endpoint.Via.
const (
	// EndpointViaHost: the Docker host's advertised address
	// (docker.hosts[].advertise_address) and a port the engine published.
	EndpointViaHost = "host"
	// EndpointViaPod: the Pod's IP, reachable from inside its cluster.
	EndpointViaPod = "pod"
)

// Address is Host:HostPort, with an IPv6 host in brackets.
func (e Endpoint) Address() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.HostPort)) }
