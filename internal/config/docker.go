package config

import (
	"net/url"

	"github.com/berth-io/berth/internal/hostpolicy"
)

// Docker is the `docker:` section: the Docker engines berth may place
// containers on.
type Docker struct {
	// Scope, when set, labels every container berth makes, and berth then
	// lists, counts and reconciles only containers of its scope: two berth
	// deployments (or a test run) can share Docker hosts without removing
	// each other's containers as orphans.
	Scope string       `yaml:"scope,omitempty"`
	Hosts []DockerHost `yaml:"hosts"`
	// Registries give pull credentials by registry host.
	Registries []Registry `yaml:"registries,omitempty"`
}

// DockerHost is one Docker engine.
type DockerHost struct {
	// Name identifies the host; it becomes runtime_node_name.
	Name string `yaml:"name"`
	// Endpoint is unix:///path or tcp://host:port.
	Endpoint string `yaml:"endpoint"`
	// TLS is required for tcp:// endpoints other than loopback.
	TLS *DockerTLS `yaml:"tls,omitempty"`
	// Labels are matched by a template's scheduling.host_labels.
	Labels map[string]string `yaml:"labels,omitempty"`
	// Capacity is how many berth containers may run there (0: no limit).
	Capacity int `yaml:"capacity"`
	// AllowedBindRoots are the only host paths bind mounts may come from;
	// empty means bind mounts are refused.
	AllowedBindRoots []string `yaml:"allowed_bind_roots,omitempty"`
	// NetworkMode for containers; the engine default when empty.
	NetworkMode string `yaml:"network_mode,omitempty"`
	// AdvertiseAddress is where clients reach the ports the host publishes
	// (an IP address or a DNS name, without a port): the host of the
	// instances' endpoints. Defaults to AdvertisedAddress's choice.
	AdvertiseAddress string `yaml:"advertise_address,omitempty"`
}

// DefaultAdvertiseAddress is the advertised address of a host reached
// through a unix:// socket when advertise_address is not set: the socket
// is on this machine, so its published ports are on its loopback.
const DefaultAdvertiseAddress = "127.0.0.1"

// AdvertisedAddress is the host's advertise_address; when it is not set,
// the host of a tcp:// endpoint, else DefaultAdvertiseAddress.
func (h DockerHost) AdvertisedAddress() string {
	if h.AdvertiseAddress != "" {
		return h.AdvertiseAddress
	}
	if u, err := url.Parse(h.Endpoint); err == nil && u.Scheme == "tcp" && u.Hostname() != "" {
		return u.Hostname()
	}
	return DefaultAdvertiseAddress
}

// DockerTLS gives the client certificate material, as files or inline PEM.
type DockerTLS struct {
	CAFile   string `yaml:"ca_file,omitempty"`
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	CA       string `yaml:"ca,omitempty"`
	Cert     string `yaml:"cert,omitempty"`
	Key      string `yaml:"key,omitempty"`
}

// Registry is a registry credential used when pulling images.
type Registry struct {
	// Host is the registry host, e.g. ghcr.io or
	// 123456789012.dkr.ecr.eu-west-1.amazonaws.com (ECR hosts get tokens
	// from AWS instead of a password).
	Host     string `yaml:"host"`
	Username string `yaml:"username,omitempty"`
	// Password is a secret: never logged.
	Password string `yaml:"password,omitempty"`
}

// BindRoots is the union of the hosts' allowed_bind_roots: what a Docker
// template may bind-mount at all (each host checks its own list again at
// create).
func (d Docker) BindRoots() []string {
	lists := make([][]string, len(d.Hosts))
	for i, h := range d.Hosts {
		lists[i] = h.AllowedBindRoots
	}
	return hostpolicy.Union(lists...)
}

// HostPathRoots is the union of every node's roots, the Docker hosts'
// allowed_bind_roots and the clusters' allowed_host_path_roots: what a
// template may bind-mount at all, whichever runtime runs it (placement
// checks each node's own list again).
func (c *Config) HostPathRoots() []string {
	lists := [][]string{c.Docker.BindRoots()}
	for _, cl := range c.Kubernetes.Clusters {
		lists = append(lists, cl.AllowedHostPathRoots)
	}
	return hostpolicy.Union(lists...)
}
