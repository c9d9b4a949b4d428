package client

import (
	"testing"
	"time"
)

// TestNextPollWait is the pace of a polled follow: the minimum after lines,
// doubling while polls come back empty up to the maximum, and never less
// than a Retry-After asks (itself bounded).
func TestNextPollWait(t *testing.T) {
	c, err := New("http://127.0.0.1:1", "", WithLogsPoll(time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		last       time.Duration
		gotLines   bool
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first poll, lines", 0, true, 0, time.Second},
		{"first poll, empty", 0, false, 0, time.Second},
		{"lines after a long idle", 8 * time.Second, true, 0, time.Second},
		{"empty after lines", time.Second, false, 0, 2 * time.Second},
		{"empty again", 2 * time.Second, false, 0, 4 * time.Second},
		{"empty at the cap", 8 * time.Second, false, 0, 10 * time.Second},
		{"empty past the cap", 10 * time.Second, false, 0, 10 * time.Second},
		{"retry-after above the wait", time.Second, true, 5 * time.Second, 5 * time.Second},
		{"retry-after below the wait", 4 * time.Second, false, time.Second, 8 * time.Second},
		{"retry-after past the bound", time.Second, true, time.Hour, maxFollowRetryAfter},
	} {
		if got := c.nextPollWait(tc.last, tc.gotLines, tc.retryAfter); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	d, err := New("http://127.0.0.1:1", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.pollWait != DefaultLogsPollWait || d.pollMaxWait != DefaultLogsPollMaxWait {
		t.Errorf("defaults %v..%v", d.pollWait, d.pollMaxWait)
	}
	if e, _ := New("http://127.0.0.1:1", "", WithLogsPoll(3*time.Second, time.Second)); e.pollMaxWait != 3*time.Second {
		t.Errorf("a maximum below the minimum: %v", e.pollMaxWait)
	}
}
