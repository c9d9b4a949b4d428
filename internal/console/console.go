// Package console is berth's web console: a few static files (HTML, one
// hand-written JavaScript module, CSS) embedded in the binary and served
// under /console by the API handler, so that `berth serve` and the api
// function serve the same console. The page talks only to the public API
// (/api/..., docs/openapi.yaml) with the caller's own credentials: it has no
// server-side part and no access of its own.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/berth-io/berth/internal/fsm"
)

// Path is where the console is served; every asset is below it.
const Path = "/console"

// CSP is the Content-Security-Policy of every console response: scripts,
// styles and requests only from berth itself, no inline script or style, no
// framing, no plugins, no third-party host.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// asset is one file as served: its bytes, their gzip and an ETag.
type asset struct {
	body, gz    []byte
	contentType string
	etag        string
}

var (
	loadOnce sync.Once
	files    map[string]*asset // by URL path under Path ("" is the page)
)

// load reads and compresses the assets once, at the first console request
// rather than at start-up, so that an api function that never serves the
// console pays nothing for it at cold start.
func load() {
	files = map[string]*asset{}
	add := func(urlPath string, body []byte, ctype string) {
		sum := sha256.Sum256(body)
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
		_, _ = w.Write(body)
		_ = w.Close()
		files[urlPath] = &asset{body: body, gz: gz.Bytes(), contentType: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		if name == "index.html" {
			name = ""
		}
		if path.Ext(name) == ".js" {
			b = StripLineComments(b)
		}
		add(name, b, contentType(name))
		return nil
	})
	add("fsm.json", FSMJSON(), "application/json")
}

// StripLineComments empties the lines of a script that are only a //
// comment, keeping every line break (so that a line number the browser
// reports is the source's). The comments are for whoever reads the source;
// the browser need not download them (about an eighth of app.js). Only
// whole lines go, so a // inside a string or a URL is never touched; the
// console's script has no template literal that spans lines, where such a
// line would be text (TestStripLineComments holds the assets to that).
func StripLineComments(src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	out := make([]byte, 0, len(src))
	for _, l := range lines {
		if bytes.HasPrefix(bytes.TrimLeft(l, " \t"), []byte("//")) {
			if bytes.HasSuffix(l, []byte("\n")) {
				out = append(out, '\n')
			}
			continue
		}
		out = append(out, l...)
	}
	return out
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	}
	return "text/html; charset=utf-8"
}

// FSMJSON is internal/fsm's table as the page reads it (GET
// /console/fsm.json): every status in lifecycle order, the statuses each
// one may move to, and the status each action asks for. The page enables an
// action only where the table allows its move, so it cannot offer what the
// server would refuse with a 409.
func FSMJSON() []byte {
	next := make(map[fsm.Status][]fsm.Status, len(fsm.All))
	for _, s := range fsm.All {
		next[s] = fsm.Next(s)
	}
	b, err := json.Marshal(struct {
		Statuses []fsm.Status                `json:"statuses"`
		Next     map[fsm.Status][]fsm.Status `json:"next"`
		Actions  map[string]fsm.Status       `json:"actions"`
	}{fsm.All, next, map[string]fsm.Status{"start": fsm.StartPending, "stop": fsm.StopPending, "delete": fsm.DeletePending,
		"pause": fsm.Paused, "resume": fsm.Running}})
	if err != nil {
		panic(fmt.Sprintf("console: encoding the FSM table: %v", err)) // static data: cannot fail
	}
	return b
}

// ConfigPath is the page's own settings (under Path): the identity
// provider to sign in with, if any.
const ConfigPath = "config.json"

// Handler serves the console without an identity provider: the page asks
// for a token.
func Handler() http.Handler {
	return New(Options{})
}

// New serves the console: GET or HEAD of Path (the page), of Path/<asset>
// and of Path/config.json (the page's settings). Anything else under Path
// is a plain 404 or 405.
func New(o Options) http.Handler {
	h := &handler{}
	if o.OIDC != nil {
		h.oidc = newDiscovery(*o.OIDC)
	}
	return h
}

type handler struct {
	oidc *discovery // nil: no identity provider
}

func (hd *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	loadOnce.Do(load)
	var prov *provider
	if hd.oidc != nil {
		prov = hd.oidc.get(r.Context())
	}
	h := w.Header()
	if prov != nil {
		h.Set("Content-Security-Policy", prov.csp())
	} else {
		h.Set("Content-Security-Policy", CSP)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	name, ok := strings.CutPrefix(r.URL.Path, Path)
	if ok && name != "" {
		name, ok = strings.CutPrefix(name, "/")
	}
	if ok && name == ConfigPath {
		serveConfig(w, r, prov)
		return
	}
	a := files[name]
	if !ok || a == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", a.contentType)
	// Revalidated each time (cheap: 304 on a matching ETag) so that a new
	// berth never runs with an old page's script.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// serveConfig answers config.json: {"oidc": {...}} with a provider, {}
// without one (or while it cannot be discovered).
func serveConfig(w http.ResponseWriter, r *http.Request, p *provider) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := json.Marshal(struct {
		OIDC *provider `json:"oidc,omitempty"`
	}{p})
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// It changes with the provider's availability: never cached.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// Size is what the console ships: the bytes of every asset as served, and
// their gzip-compressed sizes.
func Size() (raw, gzipped int) {
	loadOnce.Do(load)
	for _, a := range files {
		raw += len(a.body)
		gzipped += len(a.gz)
	}
	return raw, gzipped
}

// Redirect sends GET / to the console, for a browser pointed at berth's
// address.
func Redirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Path, http.StatusFound)
}
