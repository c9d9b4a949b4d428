package docker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
)

// newClient makes the Engine API client for one host. Every client
// negotiates the API version with its engine on first use, because hosts
// may be older than the client (API 1.41 on Debian's docker.io).
func newClient(hc config.DockerHost) (*client.Client, error) {
	u, err := url.Parse(hc.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", hc.Endpoint, err)
	}
	// The client negotiates the API version with the server by default.
	var opts []client.Opt
	switch u.Scheme {
	case "unix":
		if hc.TLS != nil {
			return nil, fmt.Errorf("endpoint %q: tls is for tcp:// endpoints", hc.Endpoint)
		}
	case "tcp":
		if hc.TLS == nil && !isLoopback(u.Hostname()) {
			// The Engine API is root on the host: never in clear over a network.
			return nil, fmt.Errorf("endpoint %q: tls is required for a tcp:// endpoint that is not loopback", hc.Endpoint)
		}
		if hc.TLS != nil {
			cfg, err := tlsConfig(*hc.TLS)
			if err != nil {
				return nil, err
			}
			// The transport must carry the TLS config before WithHost
			// configures it for tcp, and the client then speaks https.
			opts = append(opts, client.WithHTTPClient(&http.Client{
				Transport:     &http.Transport{TLSClientConfig: cfg, MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second},
				CheckRedirect: client.CheckRedirect,
			}))
		}
	default:
		return nil, fmt.Errorf("endpoint %q: want unix:// or tcp://", hc.Endpoint)
	}
	opts = append(opts, client.WithHost(hc.Endpoint))
	return client.New(opts...)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// tlsConfig builds a client TLS config from files or inline PEM; inline
// material wins over a file given for the same part.
func tlsConfig(t config.DockerTLS) (*tls.Config, error) {
	read := func(inline, file, what string) ([]byte, error) {
		if inline != "" {
			return []byte(inline), nil
		}
		if file == "" {
			return nil, nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls %s: %w", what, err)
		}
		return b, nil
	}
	ca, err := read(t.CA, t.CAFile, "ca")
	if err != nil {
		return nil, err
	}
	cert, err := read(t.Cert, t.CertFile, "cert")
	if err != nil {
		return nil, err
	}
	key, err := read(t.Key, t.KeyFile, "key")
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("tls ca: no PEM certificate found")
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The key is a secret: say which part failed, not its content.
			return nil, errors.New("tls cert/key: not a matching PEM certificate and key")
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != nil || key != nil:
		return nil, errors.New("tls: cert and key must be given together")
	}
	return cfg, nil
}
