package docker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
)

func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func TestTLSConfig(t *testing.T) {
	cert, key := selfSigned(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"ca.pem": cert, "cert.pem": cert, "key.pem": key} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		tls  config.DockerTLS
		want string // error substring; "" for success
	}{
		{"inline", config.DockerTLS{CA: cert, Cert: cert, Key: key}, ""},
		{"files", config.DockerTLS{CAFile: dir + "/ca.pem", CertFile: dir + "/cert.pem", KeyFile: dir + "/key.pem"}, ""},
		{"ca only", config.DockerTLS{CA: cert}, ""},
		{"cert without key", config.DockerTLS{Cert: cert}, "together"},
		{"bad ca", config.DockerTLS{CA: "not pem"}, "no PEM"},
		{"mismatched key", config.DockerTLS{Cert: cert, Key: "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"}, "matching"},
		{"missing file", config.DockerTLS{CAFile: dir + "/nope.pem"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tlsConfig(tt.tls)
			if tt.want == "" {
				if err != nil || cfg == nil {
					t.Fatalf("tlsConfig: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewClientEndpoints(t *testing.T) {
	cert, key := selfSigned(t)
	tests := []struct {
		name string
		host config.DockerHost
		ok   bool
	}{
		{"unix", config.DockerHost{Endpoint: "unix:///var/run/docker.sock"}, true},
		{"tcp loopback in clear", config.DockerHost{Endpoint: "tcp://127.0.0.1:2375"}, true},
		{"tcp remote in clear", config.DockerHost{Endpoint: "tcp://10.0.0.5:2375"}, false},
		{"tcp remote with tls", config.DockerHost{Endpoint: "tcp://docker-1.internal:2376", TLS: &config.DockerTLS{CA: cert, Cert: cert, Key: key}}, true},
		{"ssh", config.DockerHost{Endpoint: "ssh://host"}, false},
		{"unix with tls", config.DockerHost{Endpoint: "unix:///x.sock", TLS: &config.DockerTLS{CA: cert}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, err := newClient(tt.host)
			if (err == nil) != tt.ok {
				t.Fatalf("newClient: %v, want ok=%v", err, tt.ok)
			}
			if cli != nil {
				cli.Close()
			}
		})
	}
}
