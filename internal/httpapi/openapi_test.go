package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/docs"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// fullHandler is the handler as berth serve builds it: every optional
// route on.
func fullHandler(t *testing.T) http.Handler {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: teststores.Bolt(t, time.Now), Logger: logger})
	return httpapi.New(httpapi.Options{Manager: m, Logger: logger, Auth: httpapi.SingleUser("local"),
		Health: func(context.Context) (bool, any) { return true, map[string]any{"ok": true} }})
}

// TestOpenAPIRoutes: the document lists exactly the routes the handler
// serves, method by method.
func TestOpenAPIRoutes(t *testing.T) {
	doc := apicontract.Shared(t).Doc()
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var served []string
	for _, r := range httpapi.Routes(fullHandler(t)) {
		served = append(served, r.Method+" "+r.Pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if len(served) == 0 {
		t.Fatal("httpapi.Routes listed no routes")
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("the handler serves %s, which docs/openapi.yaml does not document", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("docs/openapi.yaml documents %s, which the handler does not serve", r)
		}
	}
}

// TestOpenAPIServed: GET /api/openapi.json needs no token and is the YAML
// document as JSON, cacheable by its ETag.
func TestOpenAPIServed(t *testing.T) {
	h := apicontract.Handler(t, httpapi.New(httpapi.Options{Manager: manager.New(manager.Options{Store: teststores.Bolt(t, time.Now)}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: httpapi.TokenAuth(nil)}))
	get := func(headers map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, httpapi.OpenAPIPath, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := get(nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s without a token: %d %s", httpapi.OpenAPIPath, rec.Code, rec.Header().Get("Content-Type"))
	}
	want, err := httpapi.OpenAPIJSON(docs.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatal("the served document is not docs/openapi.yaml")
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.0.3" || doc.Paths["/api/containers"]["post"] == nil {
		t.Fatalf("served document: %v: openapi=%q, %d paths", err, doc.OpenAPI, len(doc.Paths))
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		if r := get(map[string]string{"If-None-Match": inm}); r.Code != http.StatusNotModified || r.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and none", inm, r.Code, r.Body.Len())
		}
	}
	if r := get(map[string]string{"If-None-Match": `"stale"`}); r.Code != http.StatusOK {
		t.Errorf("If-None-Match with a stale ETag: %d, want 200", r.Code)
	}
	req := httptest.NewRequest(http.MethodPost, httpapi.OpenAPIPath, strings.NewReader("{}"))
	r := httptest.NewRecorder()
	h.ServeHTTP(r, req)
	if r.Code != http.StatusMethodNotAllowed || r.Header().Get("Allow") != "GET" {
		t.Errorf("POST %s: %d Allow %q, want 405 Allow GET", httpapi.OpenAPIPath, r.Code, r.Header().Get("Allow"))
	}
}
