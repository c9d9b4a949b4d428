package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/config"
)

// OIDC is the identity provider the console signs in with: the page runs
// the authorization code flow with PKCE itself (it sends the browser to the
// provider's authorization endpoint and trades the code for a token at its
// token endpoint), and sends the token to the API as any client does. The
// server only tells the page where the provider is (GET
// /console/config.json) and lets the page reach its token endpoint (the
// Content-Security-Policy's connect-src); it never sees a code or a
// verifier.
type OIDC struct {
	// Issuer is the provider's issuer URL; its discovery document
	// (<Issuer>/.well-known/openid-configuration) names the endpoints.
	Issuer string
	// ClientID is the console's public client at the provider, whose
	// callback URL is the console's (<base URL>/console).
	ClientID string
	// Scope is what the page asks for. Defaults to DefaultOIDCScope.
	Scope string
	// Client fetches the discovery document. Defaults to a client with
	// DefaultDiscoveryTimeout.
	Client *http.Client
}

// DefaultOIDCScope is the scope the console asks for: an ID token, whose
// audience is the console's client.
const DefaultOIDCScope = "openid email profile"

// DefaultDiscoveryTimeout bounds one fetch of the discovery document.
const DefaultDiscoveryTimeout = 5 * time.Second

// DefaultDiscoveryRetry is how long a failed discovery is remembered: the
// console meanwhile offers the token form only, rather than wait on a
// provider that is down at every request.
const DefaultDiscoveryRetry = 30 * time.Second

// Options configure a console handler.
type Options struct {
	// OIDC, when set, adds sign-in with that provider to the token form.
	OIDC *OIDC
}

// provider is what the page needs of the provider, as config.json says it.
type provider struct {
	Issuer                string `json:"issuer"`
	ClientID              string `json:"client_id"`
	Scope                 string `json:"scope"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	// EndSessionEndpoint is where signing out sends the browser, so that
	// the provider's own session ends too; empty where the provider has
	// none (the page then forgets its token only).
	EndSessionEndpoint string `json:"end_session_endpoint,omitempty"`
	// Logout is how EndSessionEndpoint reads its query: LogoutOIDC or
	// LogoutCognito.
	Logout string `json:"logout,omitempty"`
}

// The ways of signing out at the provider (provider.Logout).
const (
	// LogoutOIDC is OpenID Connect RP-initiated logout: the discovery
	// document's end_session_endpoint, with client_id,
	// post_logout_redirect_uri and id_token_hint.
	LogoutOIDC = "oidc"
	// LogoutCognito is Cognito's hosted-UI /logout (its discovery document
	// names no end_session_endpoint), on the authorization endpoint's host,
	// with client_id and logout_uri (one of the app client's LogoutURLs).
	LogoutCognito = "cognito"
)

// discovery finds and keeps the provider's endpoints: fetched at the first
// console request (so an api function that serves no console never makes
// the call), kept once found, tried again DefaultDiscoveryRetry after a
// failure.
type discovery struct {
	cfg OIDC

	mu        sync.Mutex
	found     *provider
	failedAt  time.Time
	lastError error
}

func newDiscovery(o OIDC) *discovery {
	if o.Scope == "" {
		o.Scope = DefaultOIDCScope
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: DefaultDiscoveryTimeout}
	}
	return &discovery{cfg: o}
}

// get returns the provider, or nil while it cannot be discovered.
func (d *discovery) get(ctx context.Context) *provider {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.found != nil {
		return d.found
	}
	if !d.failedAt.IsZero() && time.Since(d.failedAt) < DefaultDiscoveryRetry {
		return nil
	}
	p, err := d.fetch(ctx)
	if err != nil {
		d.failedAt, d.lastError = time.Now(), err
		return nil
	}
	d.found = p
	return p
}

// fetch reads the discovery document and checks what the page will trust:
// the issuer it names is the configured one, and both endpoints are on
// the issuer's scheme (https, or http for a loopback issuer).
func (d *discovery) fetch(ctx context.Context) (*provider, error) {
	issuer := strings.TrimSuffix(d.cfg.Issuer, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, fmt.Errorf("console: discovery of %s: %w", issuer, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("console: discovery of %s: %w", issuer, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("console: discovery of %s: status %d", issuer, resp.StatusCode)
	}
	var doc struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		EndSessionEndpoint    string `json:"end_session_endpoint"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("console: discovery of %s: %w", issuer, err)
	}
	if strings.TrimSuffix(doc.Issuer, "/") != issuer {
		return nil, fmt.Errorf("console: discovery of %s names issuer %q", issuer, doc.Issuer)
	}
	scheme := "https"
	if u, err := url.Parse(issuer); err == nil {
		scheme = u.Scheme
	}
	endpoints := []string{doc.AuthorizationEndpoint, doc.TokenEndpoint}
	if doc.EndSessionEndpoint != "" {
		endpoints = append(endpoints, doc.EndSessionEndpoint)
	}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil || u.Scheme != scheme || u.Host == "" {
			return nil, fmt.Errorf("console: discovery of %s: endpoint %q is not a %s URL", issuer, e, scheme)
		}
	}
	p := &provider{Issuer: d.cfg.Issuer, ClientID: d.cfg.ClientID, Scope: d.cfg.Scope,
		AuthorizationEndpoint: doc.AuthorizationEndpoint, TokenEndpoint: doc.TokenEndpoint}
	switch {
	case doc.EndSessionEndpoint != "":
		p.EndSessionEndpoint, p.Logout = doc.EndSessionEndpoint, LogoutOIDC
	case isCognito(issuer):
		// The hosted UI's domain is the authorization endpoint's host.
		a, _ := url.Parse(doc.AuthorizationEndpoint)
		p.EndSessionEndpoint, p.Logout = a.Scheme+"://"+a.Host+"/logout", LogoutCognito
	}
	return p, nil
}

// isCognito tells a Cognito user pool's issuer
// (https://cognito-idp.<region>.amazonaws.com/<pool id>), whose provider
// signs out at the hosted UI's /logout rather than an end_session_endpoint.
func isCognito(issuer string) bool {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" {
		return false
	}
	h := u.Hostname()
	return strings.HasPrefix(h, "cognito-idp.") && (strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn"))
}

// csp is the policy with the page allowed to reach the token endpoint.
func (p *provider) csp() string {
	u, err := url.Parse(p.TokenEndpoint)
	if err != nil {
		return CSP
	}
	return strings.Replace(CSP, "connect-src 'self'", "connect-src 'self' "+u.Scheme+"://"+u.Host, 1)
}

// OptionsFrom is the console of a berth configured with a: sign-in with
// auth.oidc_issuer when it is set.
func OptionsFrom(a config.Auth) Options {
	if a.OIDCIssuer == "" {
		return Options{}
	}
	return Options{OIDC: &OIDC{Issuer: a.OIDCIssuer, ClientID: a.OIDCClientID}}
}
