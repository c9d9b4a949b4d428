package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
)

// docker checks the `docker:` section with the same rules the Docker
// runtime applies when it dials, so that a bad host fails at start-up
// rather than at the first placement on it.
func (c *checker) docker(d *Docker) {
	names := make(map[string]int)
	for i, h := range d.Hosts {
		key := fmt.Sprintf("docker.hosts[%d]", i)
		switch first, dup := names[h.Name]; {
		case strings.TrimSpace(h.Name) == "":
			c.fail(key+".name", "must not be empty")
		case dup:
			c.fail(key+".name", "%q is already the name of docker.hosts[%d]", h.Name, first)
		default:
			names[h.Name] = i
		}
		c.dockerEndpoint(key, h)
		if h.TLS != nil {
			c.dockerTLS(key+".tls", h.TLS)
		}
		c.atLeast(key+".capacity", int64(h.Capacity), 0)
		if h.AdvertiseAddress != "" && !validHostAddress(h.AdvertiseAddress) {
			c.fail(key+".advertise_address", "want an IP address or a DNS name without scheme or port, got %q", h.AdvertiseAddress)
		}
		for j, root := range h.AllowedBindRoots {
			c.root(fmt.Sprintf("%s.allowed_bind_roots[%d]", key, j), root)
		}
	}
	hosts := make(map[string]int)
	for i, r := range d.Registries {
		key := fmt.Sprintf("docker.registries[%d].host", i)
		first, dup := hosts[r.Host]
		switch {
		case r.Host == "":
			c.fail(key, "must not be empty")
		case strings.Contains(r.Host, "/"):
			c.fail(key, "want a registry host such as ghcr.io, without scheme or path; got %q", r.Host)
		case dup:
			c.fail(key, "%q is already docker.registries[%d]", r.Host, first)
		default:
			hosts[r.Host] = i
		}
	}
}

func (c *checker) dockerEndpoint(key string, h DockerHost) {
	ek := key + ".endpoint"
	if h.Endpoint == "" {
		c.fail(ek, "must not be empty (e.g. unix:///var/run/docker.sock)")
		return
	}
	u, err := url.Parse(h.Endpoint)
	if err != nil {
		c.fail(ek, "not a URL: %w", err)
		return
	}
	switch u.Scheme {
	case "unix":
		if p := u.Host + u.Path; !path.IsAbs(u.Path) || u.Host != "" {
			c.fail(ek, "want unix:///absolute/path, got %q (%q is not an absolute path)", h.Endpoint, p)
		}
		if h.TLS != nil {
			c.fail(key+".tls", "is for tcp:// endpoints, not unix://")
		}
	case "tcp":
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" || port == "" {
			c.fail(ek, "want tcp://host:port, got %q", h.Endpoint)
			return
		}
		if h.TLS == nil && !isLoopback(host) {
			// The Engine API is root on the host: never in clear over a network.
			c.fail(key+".tls", "is required for a tcp:// endpoint that is not loopback (%s)", host)
		}
	default:
		c.fail(ek, "want a unix:// or tcp:// endpoint, got %q", h.Endpoint)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dockerTLS checks that a client certificate comes with its key. Inline
// PEM may be given alongside a file (the runtime prefers the inline one).
func (c *checker) dockerTLS(key string, t *DockerTLS) {
	hasCert := t.Cert != "" || t.CertFile != ""
	hasKey := t.Key != "" || t.KeyFile != ""
	if hasCert != hasKey {
		c.fail(key, "cert and key must be given together")
	}
	for _, f := range []struct{ name, v string }{
		{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile},
	} {
		if f.v != "" && strings.TrimSpace(f.v) != f.v {
			c.fail(key+"."+f.name, "has leading or trailing spaces: %q", f.v)
		}
	}
}

// validHostAddress reports whether s is an IP address or a DNS name (RFC
// 1123 labels of letters, digits and '-'), what an endpoint's host may be.
func validHostAddress(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
