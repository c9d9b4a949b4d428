package apicontract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

var (
	loadOnce   sync.Once
	loaded     *Validator
	loadFailed error
)

// Shared is the document's Validator, loaded once per test binary; a
// document that does not load fails t.
func Shared(t testing.TB) *Validator {
	t.Helper()
	loadOnce.Do(func() { loaded, loadFailed = Load() })
	if loadFailed != nil {
		t.Fatal(loadFailed)
	}
	return loaded
}

// Handler wraps an API handler so that every exchange it serves is
// checked against the document; a departure fails t (t.Errorf: the
// handler may run outside the test's goroutine).
func Handler(t testing.TB, h http.Handler) http.Handler {
	v := Shared(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(&r.Body)
		if err != nil {
			t.Errorf("apicontract: reading the request body: %v", err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		x := Exchange{Request: r, RequestBody: body, Status: rec.Code, Header: rec.Header().Clone(), Body: rec.Body.Bytes()}
		if err := v.Check(r.Context(), x); err != nil {
			t.Errorf("apicontract: %s\n  %v", describe(x), err)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Transport wraps a client's transport (nil: http.DefaultTransport) so
// that every exchange through it is checked against the document.
func Transport(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	v := Shared(t)
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		body, err := readBody(&r.Body)
		if err != nil {
			return nil, fmt.Errorf("apicontract: reading the request body: %w", err)
		}
		res, err := rt.RoundTrip(r)
		if err != nil {
			return res, err
		}
		rb, err := readBody(&res.Body)
		if err != nil {
			return nil, fmt.Errorf("apicontract: reading the response body: %w", err)
		}
		x := Exchange{Request: r, RequestBody: body, Status: res.StatusCode, Header: res.Header.Clone(), Body: rb}
		if err := v.Check(r.Context(), x); err != nil {
			t.Errorf("apicontract: %s\n  %v", describe(x), err)
		}
		return res, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// readBody reads *rc whole and puts an unread copy back.
func readBody(rc *io.ReadCloser) ([]byte, error) {
	if *rc == nil || *rc == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(*rc)
	_ = (*rc).Close()
	*rc = io.NopCloser(bytes.NewReader(b))
	return b, err
}
