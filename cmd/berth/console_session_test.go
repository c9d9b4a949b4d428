package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-io/berth/internal/testenv"
)

// standInSession is what the stand-in provider does beyond the sign-in:
// short-lived tokens, refresh tokens and their grant, and sign-out.
type standInSession struct {
	// lifetimes are the expires_in (s) of the tokens given, in order;
	// 3600 once used up.
	lifetimes []int
	// refreshWith is the token a refresh grant gives; "" gives no refresh
	// tokens at all.
	refreshWith   string
	refreshTokens map[string]bool // given, as Cognito's, reusable
	refreshes     []url.Values
	logouts       []url.Values
	lastIDToken   string
}

// give answers a token request with tok and, where refresh tokens are
// given and this is a code's trade, a refresh token; a refresh's answer
// has none, as Cognito's (the page keeps the one it has).
func (p *standInProvider) give(w http.ResponseWriter, tok string) {
	p.mu.Lock()
	life := 3600
	if len(p.session.lifetimes) > 0 {
		life, p.session.lifetimes = p.session.lifetimes[0], p.session.lifetimes[1:]
	}
	resp := map[string]any{"id_token": tok, "access_token": "not-for-berth", "token_type": "Bearer", "expires_in": life}
	if p.session.refreshWith != "" && tok == p.token {
		rt := rand.Text()
		if p.session.refreshTokens == nil {
			p.session.refreshTokens = map[string]bool{}
		}
		p.session.refreshTokens[rt] = true
		resp["refresh_token"] = rt
	}
	p.session.lastIDToken = tok
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(resp)
}

// refresh is the refresh_token grant: a refresh token it gave, for its
// client, trades for refreshWith.
func (p *standInProvider) refresh(w http.ResponseWriter, f url.Values) {
	p.mu.Lock()
	p.session.refreshes = append(p.session.refreshes, f)
	known := p.session.refreshTokens[f.Get("refresh_token")]
	p.mu.Unlock()
	switch {
	case f.Get("client_id") != p.clientID:
		p.refuse(w, http.StatusBadRequest, "refresh for client "+f.Get("client_id"))
	case !known:
		p.refuse(w, http.StatusBadRequest, "unknown refresh token")
	default:
		p.give(w, p.session.refreshWith)
	}
}

// logout is OpenID Connect RP-initiated logout: for its client, with the
// ID token it last gave as the hint, back to the console.
func (p *standInProvider) logout(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	p.session.logouts = append(p.session.logouts, q)
	hint := p.session.lastIDToken
	p.mu.Unlock()
	switch {
	case q.Get("client_id") != p.clientID:
		p.refuse(w, http.StatusBadRequest, "logout client_id "+q.Get("client_id"))
	case q.Get("post_logout_redirect_uri") != p.redirect:
		p.refuse(w, http.StatusBadRequest, "post_logout_redirect_uri "+q.Get("post_logout_redirect_uri"))
	case q.Get("id_token_hint") != hint:
		p.refuse(w, http.StatusBadRequest, "id_token_hint is not the last ID token")
	default:
		http.Redirect(w, r, p.redirect, http.StatusFound)
	}
}

func (p *standInProvider) sessionCounts() (exchanged int, refreshes, logouts []url.Values, refused []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanged, append([]url.Values(nil), p.session.refreshes...), append([]url.Values(nil), p.session.logouts...),
		append([]string(nil), p.refused...)
}

// TestConsoleSessionRenewAndSignOut: a sign-in with the identity provider
// keeps going before its token expires. Without a refresh token the page
// asks the user to sign in again and stays where it is, and the sign-in
// comes back to that page; signing out ends the provider's session too
// (its end_session_endpoint, with the client, the way back and the last
// ID token as the hint); with a refresh token the page trades it for a new
// token in place and uses that token from then on.
func TestConsoleSessionRenewAndSignOut(t *testing.T) {
	e := newServeEnv(t, serveOptions{noImageRefresh: true})
	e.addr = testenv.FreeAddr(t) // 127.0.0.1: a secure context for crypto.subtle
	base := "http://" + e.addr
	idp := newStandInProvider(t, "berth-console", base, aliceToken)
	// The first token lives 3 s: the page acts half-way (under
	// REFRESH_LEAD_MS), before it expires.
	idp.session.lifetimes = []int{3}
	e.env = []string{"BERTH_AUTH_OIDC_ISSUER=" + idp.srv.URL, "BERTH_AUTH_OIDC_CLIENT_ID=berth-console"}
	e.start()
	e.putTemplates()
	mine := e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "sleeper", "name": "alices-own"}), http.StatusAccepted))
	instHash := "#/containers/" + mine.ID

	b := newBrowser(t, base)
	b.run("signing in at the provider", 60*time.Second,
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)))
	b.shot("signin-provider")
	if shown := b.eval(`getComputedStyle(document.getElementById("nav")).display`); shown != "none" {
		t.Errorf("the sign-in page shows the nav (display %s)", shown)
	}
	b.run("signing in at the provider", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#signin-oidc`)),
		chromedp.WaitVisible(chromedp.CSS(`select[name=status]`)))

	// No refresh token: the page asks to sign in again, on the page.
	b.eval(`location.hash = "` + instHash + `"; ""`)
	b.run("the sign-in prompt", 60*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#inst-status`)),
		chromedp.WaitVisible(chromedp.CSS(`#session-banner #reauth`)))
	if s := b.text(`#session-banner`); !strings.Contains(s, "Your sign-in ends at") && !strings.Contains(s, "Your sign-in has ended") {
		t.Errorf("the prompt reads %q", s)
	}
	if h := b.eval(`location.hash`); h != instHash {
		t.Errorf("with the prompt the page is %q, want still %q", h, instHash)
	}
	b.axe("instance with the sign-in prompt")
	b.shot("session-prompt")
	b.eval(`window.beforeSignIn = true; ""`)
	b.run("signing in again", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#reauth`)),
		pollAcross(`!window.beforeSignIn && document.body.dataset.ready === "true" && location.hash === "`+instHash+`" && !location.search`),
		chromedp.WaitVisible(chromedp.CSS(`#inst-status`)))
	if !b.hidden(`#session-banner`) {
		t.Errorf("the prompt is still shown after signing in again: %q", b.text(`#session-banner`))
	}
	if n, _, _, refused := idp.sessionCounts(); n != 2 || len(refused) > 0 {
		t.Errorf("the provider traded %d codes and refused %q, want two trades", n, refused)
	}

	// Sign out: at the provider too, and back to the sign-in page.
	b.run("signing out", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#signout`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)),
		poll(`document.getElementById("status").innerText.includes("Signed out, at")`))
	_, _, logouts, refused := idp.sessionCounts()
	if len(logouts) != 1 || len(refused) > 0 {
		t.Fatalf("%d sign-outs at the provider (refused %q), want 1", len(logouts), refused)
	}
	if kept := b.eval(`String(sessionStorage.getItem("berth.token")) + " " + String(sessionStorage.getItem("berth.oidc"))`); kept != "null null" {
		t.Errorf("after signing out the tab keeps %q", kept)
	}

	// With a refresh token: renewed in place, before it expires; the page
	// uses the new token from then on. (The stand-in's refreshed ID
	// token is carol's, so that the page's own list shows which token it
	// sends: berth tells tokens apart only by whose they are.)
	idp.mu.Lock()
	idp.session.lifetimes, idp.session.refreshWith = []int{3}, carolToken
	idp.mu.Unlock()
	b.run("signing in with a refresh token", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#signin-oidc`)),
		chromedp.WaitVisible(chromedp.CSS(`select[name=status]`)))
	b.eval(`window.beforeRenewal = true; ""`)
	b.run("the renewal", 60*time.Second,
		poll(`sessionStorage.getItem("berth.token") === "`+carolToken+`"`),
		poll(`document.getElementById("main").innerText.includes("No containers.")`))
	_, refreshes, _, refused := idp.sessionCounts()
	if len(refreshes) != 1 || len(refused) > 0 {
		t.Errorf("%d refresh grants (refused %q), want 1", len(refreshes), refused)
	} else if refreshes[0].Get("client_id") != "berth-console" || refreshes[0].Get("refresh_token") == "" {
		t.Errorf("refresh grant %v", refreshes[0])
	}
	// Renewed in place: the same document, no reload, no navigation.
	if kept := b.eval(`String(window.beforeRenewal) + " " + location.pathname + location.search`); kept != "true /console" {
		t.Errorf("after the renewal the page is a new one: %q", kept)
	}
	if !b.hidden(`#session-banner`) {
		t.Errorf("a prompt is shown although the sign-in was renewed: %q", b.text(`#session-banner`))
	}
	if st := b.eval(`sessionStorage.getItem("berth.oidc")`); !strings.Contains(st, `"refresh_token":"`) {
		t.Errorf("the refresh token (kept, as the refresh answer gave none) is gone: %s", st)
	}
	// The sign-out's hint is the renewed ID token.
	b.run("signing out after the renewal", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#signout`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-oidc`)))
	if _, _, logouts, refused := idp.sessionCounts(); len(logouts) != 2 || len(refused) > 0 {
		t.Errorf("%d sign-outs (refused %q), want 2, the second with the renewed token as its hint", len(logouts), refused)
	}
}

// pollAcross waits until the expression is true in the page, through the
// navigations of a sign-in (each new document is asked again).
func pollAcross(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for {
			sub, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := chromedp.Poll[bool](expr)(sub, t)
			cancel()
			if err == nil || ctx.Err() != nil {
				return err
			}
		}
	})
}

// hidden tells whether the element is hidden (its hidden attribute).
func (b *browser) hidden(sel string) bool {
	b.t.Helper()
	return b.eval(`String(document.querySelector('`+sel+`').hidden)`) == "true"
}
