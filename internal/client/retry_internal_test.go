package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {" 0 ", 0}, {"-1", 0}, {"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"99999999999", 24 * time.Hour},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The waits between retries follow Retry-After, capped, and back off
// exponentially when the answer names none.
func TestRetryDelays(t *testing.T) {
	var n atomic.Int64
	answers := []string{"7", "60", "", ""}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) - 1
		if int(i) < len(answers) {
			if answers[i] != "" {
				w.Header().Set("Retry-After", answers[i])
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[]}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "", WithRetry(4, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	if _, err := c.ListTemplates(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{7 * time.Second, 10 * time.Second, 2 * time.Second, 4 * time.Second}
	if len(slept) != len(want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	for i := range want {
		if slept[i] != want[i] {
			t.Fatalf("slept %v, want %v", slept, want)
		}
	}
	// A 503 without a problem document is still an *Error.
	n.Store(0)
	c.maxRetries = 0
	_, err = c.ListTemplates(context.Background())
	if e := (*Error)(nil); !errors.As(err, &e) || e.Status != 503 || e.Problem.Title != "Service Unavailable" {
		t.Fatalf("%#v", err)
	}
}
