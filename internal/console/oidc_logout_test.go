package console_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berth-io/berth/internal/console"
)

// TestConfigNamesTheSignOut: config.json names where signing out sends the
// browser: the discovery document's end_session_endpoint (OpenID Connect
// logout); for a Cognito pool, whose document names none, the hosted UI's
// /logout on the authorization endpoint's host; nothing for another
// provider without one. An end_session_endpoint off the issuer's scheme is
// not trusted (no provider at all).
func TestConfigNamesTheSignOut(t *testing.T) {
	const cognitoIssuer = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123"
	const hostedUI = "https://berth-console.auth.eu-west-1.amazoncognito.com"
	for _, tc := range []struct {
		name       string
		issuer     string // "" for the test server's own URL
		doc        func(issuer string) map[string]string
		endSession func(issuer string) string // "" for none
		logout     string
		noProvider bool
	}{
		{name: "end_session_endpoint", doc: func(iss string) map[string]string {
			return map[string]string{"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
				"end_session_endpoint": iss + "/logout"}
		}, endSession: func(iss string) string { return iss + "/logout" }, logout: console.LogoutOIDC},
		{name: "cognito", issuer: cognitoIssuer, doc: func(iss string) map[string]string {
			return map[string]string{"issuer": iss, "authorization_endpoint": hostedUI + "/oauth2/authorize", "token_endpoint": hostedUI + "/oauth2/token"}
		}, endSession: func(string) string { return hostedUI + "/logout" }, logout: console.LogoutCognito},
		{name: "none", doc: func(iss string) map[string]string {
			return map[string]string{"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token"}
		}, endSession: func(string) string { return "" }},
		{name: "end_session_endpoint off the scheme", doc: func(iss string) map[string]string {
			return map[string]string{"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
				"end_session_endpoint": "javascript:alert(1)"}
		}, noProvider: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var issuer string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/.well-known/openid-configuration" && r.URL.Path != "/eu-west-1_AbC123/.well-known/openid-configuration" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(tc.doc(issuer))
			}))
			t.Cleanup(srv.Close)
			issuer = srv.URL
			if tc.issuer != "" {
				issuer = tc.issuer
			}
			// Every host is this server (Cognito's issuer included), its
			// certificate checked for the name it was made for.
			client := srv.Client()
			tr := client.Transport.(*http.Transport).Clone()
			tr.TLSClientConfig = &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "example.com", MinVersion: tls.VersionTLS12}
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
			}
			client.Transport = tr
			h := console.New(console.Options{OIDC: &console.OIDC{Issuer: issuer, ClientID: "console-client", Client: client}})
			var body struct {
				OIDC map[string]string `json:"oidc"`
			}
			if err := json.NewDecoder(serveWith(h, "/console/config.json").Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if tc.noProvider {
				if body.OIDC != nil {
					t.Errorf("config.json names a provider whose document is not trusted: %v", body.OIDC)
				}
				return
			}
			if body.OIDC == nil {
				t.Fatal("config.json names no provider")
			}
			if got, want := body.OIDC["end_session_endpoint"], tc.endSession(issuer); got != want {
				t.Errorf("end_session_endpoint %q, want %q", got, want)
			}
			if got := body.OIDC["logout"]; got != tc.logout {
				t.Errorf("logout %q, want %q", got, tc.logout)
			}
		})
	}
}
