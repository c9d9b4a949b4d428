package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/berth-io/berth/internal/notify/webhook"
)

func TestCheckURL(t *testing.T) {
	none, err := webhook.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	local, err := webhook.NewGuard([]string{"127.0.0.0/8", "10.1.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		guard webhook.Guard
		url   string
		want  error // nil: allowed
	}{
		{"public IPv4", none, "https://93.184.216.34/hook", nil},
		{"public IPv6", none, "https://[2606:2800:220:1:248:1893:25c8:1946]:8443/hook", nil},
		{"loopback", none, "http://127.0.0.1:8080/hook", webhook.ErrRefused},
		{"loopback elsewhere in 127/8", none, "http://127.3.2.1/", webhook.ErrRefused},
		{"IPv6 loopback", none, "http://[::1]:8080/", webhook.ErrRefused},
		{"IPv4-mapped loopback", none, "http://[::ffff:127.0.0.1]/", webhook.ErrRefused},
		{"instance metadata", none, "http://169.254.169.254/latest/meta-data/", webhook.ErrRefused},
		{"link-local", none, "http://169.254.1.1/", webhook.ErrRefused},
		{"IPv6 link-local", none, "http://[fe80::1]/", webhook.ErrRefused},
		{"private 10/8", none, "http://10.0.0.1/", webhook.ErrRefused},
		{"private 172.16/12", none, "http://172.16.5.4/", webhook.ErrRefused},
		{"private 192.168/16", none, "http://192.168.1.1/", webhook.ErrRefused},
		{"unique local IPv6", none, "http://[fd00::1]/", webhook.ErrRefused},
		{"shared address space", none, "http://100.64.0.1/", webhook.ErrRefused},
		{"unspecified", none, "http://0.0.0.0:80/", webhook.ErrRefused},
		{"NAT64 of loopback", none, "http://[64:ff9b::7f00:1]/", webhook.ErrRefused},
		{"IPv4-compatible loopback", none, "http://[::127.0.0.1]/", webhook.ErrRefused},
		{"IPv4-compatible public", none, "http://[::93.184.216.34]/", webhook.ErrRefused},
		{"IPv4-translated (SIIT) loopback", none, "http://[::ffff:0:127.0.0.1]/", webhook.ErrRefused},
		{"IPv4-mapped public", none, "http://[::ffff:93.184.216.34]/", nil},
		{"NAT64 of public", none, "http://[64:ff9b::93.184.216.34]/", nil},
		{"NAT64 of metadata", none, "http://[64:ff9b::169.254.169.254]/", webhook.ErrRefused},
		{"local-use NAT64", none, "http://[64:ff9b:1::93.184.216.34]/", webhook.ErrRefused},
		{"6to4 of loopback", none, "http://[2002:7f00:1::1]/", webhook.ErrRefused},
		{"6to4 of public", none, "http://[2002:5db8:d822::1]/", webhook.ErrRefused},
		{"Teredo", none, "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", webhook.ErrRefused},
		{"IPv6 site-local", none, "http://[fec0::1]/", webhook.ErrRefused},
		{"IPv6 documentation", none, "http://[2001:db8::1]/", webhook.ErrRefused},
		{"IPv6 documentation 3fff::/20", none, "http://[3fff::1]/", webhook.ErrRefused},
		{"IPv6 benchmarking", none, "http://[2001:2::1]/", webhook.ErrRefused},
		{"IPv6 discard-only", none, "http://[100::1]/", webhook.ErrRefused},
		{"IPv6 segment routing", none, "http://[5f00::1]/", webhook.ErrRefused},
		{"IPv6 outside 2000::/3", none, "http://[4000::1]/", webhook.ErrRefused},
		{"IPv6 multicast", none, "http://[ff02::1]/", webhook.ErrRefused},
		{"zoned link-local", none, "http://[fe80::1%25eth0]/", webhook.ErrRefused},
		{"TEST-NET-1", none, "http://192.0.2.1/", webhook.ErrRefused},
		{"TEST-NET-2", none, "http://198.51.100.1/", webhook.ErrRefused},
		{"TEST-NET-3", none, "http://203.0.113.1/", webhook.ErrRefused},
		{"6to4 relay anycast", none, "http://192.88.99.1/", webhook.ErrRefused},
		{"benchmarking", none, "http://198.19.0.1/", webhook.ErrRefused},
		{"IPv4 multicast", none, "http://224.0.0.1/", webhook.ErrRefused},
		{"limited broadcast", none, "http://255.255.255.255/", webhook.ErrRefused},
		{"reserved", none, "http://240.0.0.1/", webhook.ErrRefused},
		{"name resolving to loopback", none, "http://localhost:9000/", webhook.ErrRefused},
		{"name that does not resolve", none, "https://no-such-host.invalid/", webhook.ErrRefused},
		{"allowed loopback", local, "http://127.0.0.1:9000/hook", nil},
		{"allowed name to loopback", local, "http://localhost:9000/hook", nil},
		{"allowed private network", local, "http://10.1.2.3/", nil},
		{"private network not listed", local, "http://10.2.0.1/", webhook.ErrRefused},
		{"allowed network IPv4-mapped", local, "http://[::ffff:10.1.2.3]/", nil},
		{"allowed network through NAT64", local, "http://[64:ff9b::10.1.2.3]/", nil},
		{"NAT64 of a network not listed", local, "http://[64:ff9b::10.2.0.1]/", webhook.ErrRefused},

		{"metadata still refused", local, "http://169.254.169.254/", webhook.ErrRefused},
		{"scheme", none, "ftp://93.184.216.34/", webhook.ErrInvalidURL},
		{"no host", none, "https:///path", webhook.ErrInvalidURL},
		{"user info", none, "https://u:p@93.184.216.34/", webhook.ErrInvalidURL},
		{"not a URL", none, "::", webhook.ErrInvalidURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.guard.CheckURL(context.Background(), tc.url)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("CheckURL(%q) = %v; want %v", tc.url, err, tc.want)
			}
		})
	}
}

func TestNewGuardRefusesBadCIDR(t *testing.T) {
	if _, err := webhook.NewGuard([]string{"127.0.0.1"}); err == nil {
		t.Error("NewGuard accepted an address without a prefix length")
	}
}

// rebinding resolves every name to a public address, as a name whose
// owner changes its DNS answer after the subscription would.
type rebinding struct{}

func (rebinding) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// TestClientChecksEveryConnection: the client refuses to connect to an
// address the guard refuses, whatever the URL's check said earlier, and
// delivers once the network is allowed.
func TestClientChecksEveryConnection(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	name := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	g := webhook.Guard{Resolver: rebinding{}}
	if err := g.CheckURL(context.Background(), name); err != nil {
		t.Fatalf("CheckURL through the rebinding resolver: %v", err)
	}
	for _, u := range []string{srv.URL, name} {
		resp, err := webhook.NewClient(g, time.Second).Post(u, "application/json", nil)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, webhook.ErrRefused) {
			t.Errorf("POST %s = %v; want ErrRefused", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver got %d requests through a refusing guard", hits.Load())
	}
	allowed, _ := webhook.NewGuard([]string{"127.0.0.0/8"})
	resp, err := webhook.NewClient(allowed, time.Second).Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatalf("POST with 127.0.0.0/8 allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("receiver hits = %d; want 1", hits.Load())
	}
}

// TestClientFollowsNoRedirect: a receiver redirecting (to the metadata
// address, or to an allowed one) fails the attempt; the target is never
// requested.
func TestClientFollowsNoRedirect(t *testing.T) {
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	allowed, _ := webhook.NewGuard([]string{"127.0.0.0/8"})
	for _, to := range []string{"http://169.254.169.254/latest/meta-data/", target.URL + "/elsewhere"} {
		for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, to, code)
			}))
			resp, err := webhook.NewClient(allowed, time.Second).Post(redirector.URL, "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
			}
			if !errors.Is(err, webhook.ErrRedirect) {
				t.Errorf("POST answered %d → %s: %v; want ErrRedirect", code, to, err)
			}
			redirector.Close()
		}
	}
	if targetHits.Load() != 0 {
		t.Errorf("a redirect was followed %d times", targetHits.Load())
	}
}

// TestSignVerifiesWithStandardWebhooks: berth's signature is accepted by
// the specification's reference library, and a changed body is not.
func TestSignVerifiesWithStandardWebhooks(t *testing.T) {
	secret := webhook.NewSecret()
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q lacks whsec_", secret)
	}
	if webhook.NewSecret() == secret {
		t.Fatal("two secrets are equal")
	}
	body := []byte(`{"type":"container.status_changed","seq":3}`)
	now := time.Now()
	sig, err := webhook.Sign(secret, "msg_01", now, body)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_01")
	h.Set(webhook.HeaderTimestamp, strconvUnix(now))
	h.Set(webhook.HeaderSignature, sig)
	if err := verifier.Verify(body, h); err != nil {
		t.Fatalf("standard-webhooks refuses berth's signature: %v", err)
	}
	if err := verifier.Verify([]byte(`{"seq":4}`), h); err == nil {
		t.Fatal("standard-webhooks accepted a changed body")
	}
}
