package console_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/console"
	"github.com/berth-io/berth/internal/fsm"
)

func get(t *testing.T, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	console.Handler().ServeHTTP(w, r)
	return w.Result()
}

// TestServesAssetsWithCSP: every console response, found or not, carries
// the strict policy; each asset has its type, an ETag and a gzip form.
func TestServesAssetsWithCSP(t *testing.T) {
	for _, tc := range []struct {
		path, ctype string
		status      int
		contains    string
	}{
		{"/console", "text/html; charset=utf-8", 200, `<script type="module" src="/console/app.js">`},
		{"/console/app.js", "text/javascript; charset=utf-8", 200, "function route()"},
		{"/console/style.css", "text/css; charset=utf-8", 200, ":focus-visible"},
		{"/console/fsm.json", "application/json", 200, `"statuses"`},
		{"/console/nope.js", "", 404, ""},
		{"/console/index.html", "", 404, ""},
		{"/consolex", "", 404, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := get(t, "GET", tc.path, nil)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != console.CSP {
				t.Errorf("CSP %q", got)
			}
			if !strings.Contains(console.CSP, "default-src 'self'") || strings.Contains(console.CSP, "unsafe") {
				t.Errorf("CSP is not strict: %s", console.CSP)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", resp.Header)
			}
			if tc.status != 200 {
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if !strings.Contains(string(b), tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			etag := resp.Header.Get("ETag")
			if again := get(t, "GET", tc.path, map[string]string{"If-None-Match": etag}); etag == "" || again.StatusCode != http.StatusNotModified {
				t.Errorf("ETag %q: revalidation answered %d, want 304", etag, again.StatusCode)
			}
			gz := get(t, "GET", tc.path, map[string]string{"Accept-Encoding": "br, gzip"})
			if gz.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("no gzip for Accept-Encoding gzip")
			}
			zr, err := gzip.NewReader(gz.Body)
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := io.ReadAll(zr)
			if string(plain) != string(b) {
				t.Errorf("gzip body differs from the plain one")
			}
		})
	}
}

// TestNoInlineScriptOrStyle: the page holds nothing the CSP would block
// (an inline script, a style attribute or element, a third-party URL).
func TestNoInlineScriptOrStyle(t *testing.T) {
	for _, p := range []string{"/console", "/console/app.js"} {
		b, _ := io.ReadAll(get(t, "GET", p, nil).Body)
		s := string(b)
		for _, bad := range []string{"<style", "style=", "javascript:", "http://", "https://", "innerHTML", "eval(", "new Function"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		if p == "/console" && strings.Count(s, "<script") != 1 {
			t.Errorf("%s: want exactly one (external) script", p)
		}
	}
}

func TestMethods(t *testing.T) {
	if resp := get(t, "POST", "/console", nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", resp.StatusCode, resp.Header)
	}
	resp := get(t, "HEAD", "/console/app.js", nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(b) != 0 || resp.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d body bytes", resp.StatusCode, len(b))
	}
}

// TestFSMJSONIsTheTable: the page's action table is fsm's, move for move.
func TestFSMJSONIsTheTable(t *testing.T) {
	var got struct {
		Statuses []fsm.Status
		Next     map[fsm.Status][]fsm.Status
		Actions  map[string]fsm.Status
	}
	if err := json.Unmarshal(console.FSMJSON(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Statuses) != len(fsm.All) {
		t.Fatalf("statuses %v", got.Statuses)
	}
	for _, from := range fsm.All {
		for _, to := range fsm.All {
			listed := false
			for _, n := range got.Next[from] {
				listed = listed || n == to
			}
			if listed != fsm.Can(from, to) {
				t.Errorf("%s → %s: page says %t, fsm says %t", from, to, listed, fsm.Can(from, to))
			}
		}
	}
	want := map[string]fsm.Status{"start": fsm.StartPending, "stop": fsm.StopPending, "delete": fsm.DeletePending}
	for a, s := range want {
		if got.Actions[a] != s {
			t.Errorf("action %s asks for %q, want %q", a, got.Actions[a], s)
		}
	}
}

func TestRedirect(t *testing.T) {
	w := httptest.NewRecorder()
	console.Redirect(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusFound || w.Header().Get("Location") != console.Path {
		t.Errorf("%d %v", w.Code, w.Header())
	}
}

// TestSize reports what the console ships (see docs/console.md) and keeps
// it small: the whole console under 72 KiB, 20.5 KiB gzipped.
func TestSize(t *testing.T) {
	raw, gz := console.Size()
	t.Logf("console assets: %d bytes, %d gzipped", raw, gz)
	if raw == 0 || raw > 72<<10 || gz > 41<<9 {
		t.Errorf("console assets %d bytes (%d gzipped): over budget", raw, gz)
	}
}
