package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// The fuzzers run the real handler on one bolt store per process (each
// fuzzing worker opens its own), so state piles up across inputs as it
// does in a live server. `go test` runs only the seeds; fuzz with e.g.
//
//	go test -run '^$' -fuzz FuzzDecodeCreate -fuzztime 150s ./internal/httpapi

// fuzzAPI is a handler on a fresh bolt store with the busybox template and
// one container of alice's; it returns the container's id.
func fuzzAPI(f *testing.F) (http.Handler, string) {
	f.Helper()
	s := teststores.Bolt(f, time.Now)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: s, MaxPending: 1 << 20, Runtimes: []string{"docker"},
		BindRoots: []string{"/srv/berth"}, Logger: logger, WaitPoll: time.Millisecond})
	h := httpapi.New(httpapi.Options{Manager: m, Logger: logger,
		WaitMax: 20 * time.Millisecond, // a fuzzed ?timeout= must not stall the fuzzer
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: admin, User: "root", Admin: true},
			{Token: alice, User: "alice"},
			{Token: bob, User: "bob"},
		})})
	for _, req := range []struct{ method, path, body string }{
		{"PUT", "/api/templates/busybox", busyboxTemplate},
		{"POST", "/api/containers", `{"template":"busybox","name":"seed"}`},
	} {
		tok := admin
		if req.method == "POST" {
			tok = alice
		}
		r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
		r.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= 300 {
			f.Fatalf("%s %s: %d %s", req.method, req.path, rec.Code, rec.Body)
		}
		if req.method == "POST" {
			var in container.Instance
			if err := json.Unmarshal(rec.Body.Bytes(), &in); err != nil {
				f.Fatal(err)
			}
			return h, in.ID
		}
	}
	panic("unreachable")
}

// checkAnswer fails on a 5xx and on an error that is not a problem document.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, what string) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s: %d: %s", what, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		var p httpapi.Problem
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s: %d with Content-Type %q", what, rec.Code, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Title == "" {
			t.Fatalf("%s: %d with a bad problem document (%v): %s", what, rec.Code, err, rec.Body)
		}
	}
}

// FuzzDecodeCreate sends arbitrary bytes as the body of POST
// /api/containers: never a panic (the handler would answer 500), never a
// 5xx, only the statuses the API documents for a create.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{
		`{"template":"busybox"}`,
		`{"template":"busybox","name":"web-1","env":{"GREETING":"hi"},"labels":{"team":"a"},"group":"run-1"}`,
		`{"template":"busybox","env":{"PATH":"/x"}}`,
		`{"template":"busybox","name":"$USERID"}`,
		`{"template":"nope"}`,
		`{"template":""}`,
		`{"template":"busybox","labels":{"":""}}`,
		`{"template":"busybox","name":"` + strings.Repeat("a", 300) + `"}`,
		`{"template":"busybox","extra":1}`,
		`{"template":1}`,
		`{"template":"busybox","env":null,"labels":null}`,
		`{"template":"busybox"}{}`,
		`{"template":"busybox"} `,
		`{"template":"busy`,
		`[]`, `null`, `""`, `0`, ``, ` `, "\x00", "\xff\xfe{}",
		`{"template":"busybox","name":"\ud800"}`,
		`{"template":"busybox","labels":{"k":"v\u0000"}}`,
	} {
		f.Add([]byte(s))
	}
	h, _ := fuzzAPI(f)
	allowed := map[int]bool{202: true, 400: true, 413: true, 422: true, 429: true}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/containers", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		checkAnswer(t, rec, "POST /api/containers")
		if !allowed[rec.Code] {
			t.Fatalf("status %d is not one a create answers: %s", rec.Code, rec.Body)
		}
		if rec.Code == 202 {
			var in container.Instance
			if err := json.Unmarshal(rec.Body.Bytes(), &in); err != nil || in.ID == "" || in.Owner != "alice" || in.Template != "busybox" {
				t.Fatalf("202 with %+v (%v): %s", in, err, rec.Body)
			}
			if !utf8.ValidString(in.Name) {
				t.Fatalf("stored a name that is not UTF-8: %q", in.Name)
			}
		}
	})
}

// FuzzHandler sends arbitrary requests, as far as net/http's server would
// pass them on (a valid method token, a parseable request target, valid
// header fields): never a 5xx, errors always problem documents. "{id}" in
// a path stands for an existing container of alice's.
func FuzzHandler(f *testing.F) {
	type seed struct {
		method, path, query, hname, hvalue, body string
		who                                      byte
	}
	for _, s := range []seed{
		{"GET", "/api/containers", "", "", "", "", 1},
		{"GET", "/api/containers", "status=running&status=pending&limit=2&label=tier%3Dtest", "", "", "", 1},
		{"GET", "/api/containers", "owner=alice&limit=0", "", "", "", 3},
		{"GET", "/api/containers", "cursor=eyJ4IjoxfQ", "", "", "", 1},
		{"GET", "/api/containers", "cursor=%FF%FE", "", "", "", 3},
		{"POST", "/api/containers", "", "Idempotency-Key", "k1", `{"template":"busybox"}`, 1},
		{"POST", "/api/containers", "", "Idempotency-Key", "k1", `{"template":"busybox","name":"x"}`, 1},
		{"GET", "/api/containers/{id}", "", "", "", "", 1},
		{"GET", "/api/containers/{id}", "", "", "", "", 2},
		{"POST", "/api/containers/{id}/start", "", "If-Match", `"1"`, "", 1},
		{"POST", "/api/containers/{id}/stop", "", "If-Match", `W/"999999999999999999999"`, "", 1},
		{"DELETE", "/api/containers/{id}", "", "If-Match", "-1", "", 1},
		{"GET", "/api/containers/{id}/wait", "status=running&timeout=1ms", "", "", "", 1},
		{"GET", "/api/containers/{id}/wait", "status=bogus&timeout=-5s", "", "", "", 1},
		{"GET", "/api/containers/{id}/events", "limit=1&cursor=x", "", "", "", 1},
		{"GET", "/api/templates", "", "", "", "", 2},
		{"GET", "/api/templates/busybox", "", "", "", "", 2},
		{"PUT", "/api/templates/t1", "", "Content-Type", "application/json", `{"runtime":"docker","image":"x"}`, 3},
		{"PUT", "/api/templates/t1", "", "", "", `{"runtime":"docker","image":"x","volumes":[{"source":"/srv/berth/../etc","target":"/x","type":"bind"}]}`, 3},
		{"DELETE", "/api/templates/t1", "", "", "", "", 3},
		{"PATCH", "/api/containers", "", "", "", "", 1},
		{"GET", "/api/containers/%2e%2e/x", "", "", "", "", 1},
		{"GET", "//api//containers/", "", "", "", "", 1},
		{"GET", "/healthz", "", "X-Request-Id", "abc", "", 0},
		{"OPTIONS", "*", "", "", "", "", 0},
	} {
		f.Add(s.method, s.path, s.query, s.hname, s.hvalue, []byte(s.body), s.who)
	}
	h, id := fuzzAPI(f)
	tokens := []string{"", alice, bob, admin, "wrong"}
	f.Fuzz(func(t *testing.T, method, path, query, hname, hvalue string, body []byte, who byte) {
		if !validToken(method) {
			return // net/http's server answers 400 itself
		}
		path = strings.ReplaceAll(path, "{id}", id)
		target := path
		if query != "" {
			target += "?" + query
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || strings.ContainsAny(target, " \r\n\x00") {
			return // not a request line net/http's server accepts
		}
		r := &http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "berth.test", RemoteAddr: "192.0.2.1:1234",
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		if hname != "" {
			if !validToken(hname) || !validFieldValue(hvalue) {
				return
			}
			r.Header.Add(hname, hvalue)
		}
		if tok := tokens[int(who)%len(tokens)]; tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		r = r.WithContext(t.Context())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if target == "*" {
			// http.ServeMux answers the asterisk form (OPTIONS *) itself
			// with a bare 400, not a problem document: only no 5xx here.
			if rec.Code >= 500 {
				t.Fatalf("%s *: %d", method, rec.Code)
			}
			return
		}
		checkAnswer(t, rec, method+" "+target)
	})
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
