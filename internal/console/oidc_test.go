package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/console"
)

// discoveryServer answers the discovery document doc makes from its own URL,
// and counts the fetches.
func discoveryServer(t *testing.T, doc func(base string) map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc(srv.URL))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func serveWith(h http.Handler, path string) *http.Response {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Result()
}

// TestConfigNamesTheProvider: config.json tells the page the provider's
// endpoints, client and scope (found once, by discovery), and every
// console response's CSP lets the page reach the token endpoint's origin
// and no other; a discovery document that names another issuer or an
// endpoint off the issuer's scheme is not trusted: no provider, the
// strict CSP, and no new fetch before DefaultDiscoveryRetry.
func TestConfigNamesTheProvider(t *testing.T) {
	good, fetches := discoveryServer(t, func(base string) map[string]string {
		return map[string]string{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token"}
	})
	h := console.New(console.Options{OIDC: &console.OIDC{Issuer: good.URL + "/", ClientID: "console-client"}})
	for range 3 {
		resp := serveWith(h, "/console/config.json")
		var body struct {
			OIDC map[string]string `json:"oidc"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"issuer": good.URL + "/", "client_id": "console-client", "scope": console.DefaultOIDCScope,
			"authorization_endpoint": good.URL + "/authorize", "token_endpoint": good.URL + "/token"}
		for k, v := range want {
			if body.OIDC[k] != v {
				t.Errorf("config.json %s = %q, want %q", k, body.OIDC[k], v)
			}
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("config.json Cache-Control %q", resp.Header.Get("Cache-Control"))
		}
	}
	csp := serveWith(h, "/console").Header.Get("Content-Security-Policy")
	if want := strings.Replace(console.CSP, "connect-src 'self'", "connect-src 'self' "+good.URL, 1); csp != want {
		t.Errorf("CSP %q, want %q", csp, want)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d discovery fetches, want 1", n)
	}

	for name, doc := range map[string]func(string) map[string]string{
		"another issuer": func(base string) map[string]string {
			return map[string]string{"issuer": "https://elsewhere.example", "authorization_endpoint": base + "/a", "token_endpoint": base + "/t"}
		},
		"an endpoint off the issuer's scheme": func(base string) map[string]string {
			return map[string]string{"issuer": base, "authorization_endpoint": "javascript:alert(1)", "token_endpoint": base + "/t"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			bad, fetches := discoveryServer(t, doc)
			h := console.New(console.Options{OIDC: &console.OIDC{Issuer: bad.URL, ClientID: "c"}})
			for range 2 {
				resp := serveWith(h, "/console/config.json")
				var body map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body) != 0 {
					t.Errorf("config.json %v (%v), want {}", body, err)
				}
				if csp := resp.Header.Get("Content-Security-Policy"); csp != console.CSP {
					t.Errorf("CSP %q, want the strict one", csp)
				}
			}
			if n := fetches.Load(); n != 1 {
				t.Errorf("%d discovery fetches, want 1 until the retry delay", n)
			}
		})
	}

	// Without a provider: {} and the strict policy, as berth serve's token
	// sign-in has it.
	resp := serveWith(console.New(console.OptionsFrom(config.Auth{})), "/console/config.json")
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body) != 0 || resp.Header.Get("Content-Security-Policy") != console.CSP {
		t.Errorf("without a provider: %v %v %q", body, err, resp.Header.Get("Content-Security-Policy"))
	}
}
