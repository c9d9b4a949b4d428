package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-io/berth/internal/testenv"
)

// standInProvider is an OpenID Connect provider on loopback that does what the
// console's sign-in needs of Cognito or another issuer, strictly: discovery,
// an authorization endpoint that takes only S256 challenges for its one
// client and callback, and a token endpoint that gives a token once per
// code, to the verifier of that code's challenge. The token it gives is one
// berth serve's auth.tokens accepts, so the API answers the page.
type standInProvider struct {
	t        *testing.T
	srv      *httptest.Server
	clientID string
	redirect string
	origin   string // the console's, for CORS
	token    string

	mu        sync.Mutex
	codes     map[string]string // code → its challenge
	exchanged int               // codes traded for a token
	refused   []string          // why other requests were refused
	session   standInSession    // refresh and sign-out (console_session_test.go)
}

func newStandInProvider(t *testing.T, clientID, consoleBase, token string) *standInProvider {
	p := &standInProvider{t: t, clientID: clientID, redirect: consoleBase + "/console", origin: consoleBase, token: token,
		codes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": p.srv.URL, "authorization_endpoint": p.srv.URL + "/authorize",
			"token_endpoint": p.srv.URL + "/token", "end_session_endpoint": p.srv.URL + "/logout", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.exchange)
	mux.HandleFunc("GET /logout", p.logout)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *standInProvider) refuse(w http.ResponseWriter, status int, why string) {
	p.mu.Lock()
	p.refused = append(p.refused, why)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": why})
}

func (p *standInProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("response_type") != "code":
		p.refuse(w, http.StatusBadRequest, "response_type "+q.Get("response_type"))
	case q.Get("client_id") != p.clientID:
		p.refuse(w, http.StatusBadRequest, "client_id "+q.Get("client_id"))
	case q.Get("redirect_uri") != p.redirect:
		p.refuse(w, http.StatusBadRequest, "redirect_uri "+q.Get("redirect_uri"))
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		p.refuse(w, http.StatusBadRequest, "challenge "+q.Get("code_challenge_method")+" "+q.Get("code_challenge"))
	case q.Get("state") == "" || !strings.Contains(q.Get("scope"), "openid"):
		p.refuse(w, http.StatusBadRequest, "state or scope")
	default:
		code := rand.Text()
		p.mu.Lock()
		p.codes[code] = q.Get("code_challenge")
		p.mu.Unlock()
		back, _ := url.Parse(p.redirect)
		back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
}

func (p *standInProvider) exchange(w http.ResponseWriter, r *http.Request) {
	// The page calls from the console's origin: CORS, as Cognito's token
	// endpoint answers a browser.
	if r.Header.Get("Origin") != p.origin {
		p.refuse(w, http.StatusForbidden, "origin "+r.Header.Get("Origin"))
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", p.origin)
	if err := r.ParseForm(); err != nil {
		p.refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	f := r.PostForm
	if f.Get("grant_type") == "refresh_token" {
		p.refresh(w, f)
		return
	}
	p.mu.Lock()
	challenge, ok := p.codes[f.Get("code")]
	delete(p.codes, f.Get("code")) // once
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	switch {
	case f.Get("grant_type") != "authorization_code" || f.Get("client_id") != p.clientID || f.Get("redirect_uri") != p.redirect:
		p.refuse(w, http.StatusBadRequest, "grant "+f.Encode())
	case !ok:
		p.refuse(w, http.StatusBadRequest, "unknown or used code")
	case base64.RawURLEncoding.EncodeToString(sum[:]) != challenge:
		p.refuse(w, http.StatusBadRequest, "verifier does not match the challenge")
	default:
		p.mu.Lock()
		p.exchanged++
		p.mu.Unlock()
		p.give(w, p.token)
	}
}

func (p *standInProvider) counts() (exchanged int, refused []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanged, append([]string(nil), p.refused...)
}

// TestConsoleSignInWithPKCE: with auth.oidc_issuer set, the console offers
// the provider's sign-in; the page sends the browser there with an S256
// challenge, trades the code it comes back with for a token with the
// verifier (the page's CSP lets it reach the token endpoint, and only
// that), drops the code from the address and is signed in. A code the tab
// did not ask for (a forged state) is refused before any exchange.
func TestConsoleSignInWithPKCE(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{noImageRefresh: true})
	// 127.0.0.1: a secure context for the page's crypto.subtle, as https
	// is on AWS.
	e.addr = testenv.FreeAddr(t)
	base := "http://" + e.addr
	idp := newStandInProvider(t, "berth-console", base, aliceToken)
	e.env = []string{"BERTH_AUTH_OIDC_ISSUER=" + idp.srv.URL, "BERTH_AUTH_OIDC_CLIENT_ID=berth-console"}
	e.start()

	resp, err := http.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' "+idp.srv.URL+";") {
		t.Errorf("the page's CSP does not let it reach the token endpoint (and only it): %s", csp)
	}

	b := newBrowser(t, base)
	b.run("opening the console", 60*time.Second, chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)))
	if s := b.text("#signin-oidc"); !strings.Contains(s, strings.TrimPrefix(idp.srv.URL, "http://")) {
		t.Errorf("the sign-in button reads %q, want the provider's host", s)
	}
	b.axe("sign-in with a provider")
	b.run("signing in at the provider", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#signin-oidc`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/containers"]`)),
		chromedp.WaitVisible(chromedp.CSS(`select[name=status]`)))
	if n, refused := idp.counts(); n != 1 || len(refused) > 0 {
		t.Errorf("the provider traded %d codes and refused %q, want one trade and no refusal", n, refused)
	}
	if loc := get(b, "reading the URL", 20*time.Second, chromedp.Location()); strings.Contains(loc, "code=") || strings.Contains(loc, "state=") {
		t.Errorf("the address still holds the code: %s", loc)
	}
	if tok := b.eval(`sessionStorage.getItem("berth.token")`); tok != aliceToken {
		t.Errorf("the page keeps %q, want the provider's ID token", tok)
	}
	if leftover := b.eval(`String(sessionStorage.getItem("berth.pkce"))`); leftover != "null" {
		t.Errorf("the verifier is still kept: %s", leftover)
	}

	// Signed out, a code with a state this tab never made is refused
	// without being traded.
	b.run("signing out", 30*time.Second, chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)))
	b.run("a forged answer", 60*time.Second,
		chromedp.Navigate(base+"/console?code=stolen&state=forged"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)),
		poll(`document.getElementById("status").innerText.includes("not asked for by this tab")`))
	if n, _ := idp.counts(); n != 1 {
		t.Errorf("%d codes traded after a forged answer, want still 1", n)
	}
	if tok := b.eval(`String(sessionStorage.getItem("berth.token"))`); tok != "null" {
		t.Errorf("signed in by a forged answer: %s", tok)
	}
}
