package chaosload

import (
	"math/rand/v2"
	"net/http"
	"testing"
)

// TestSchedule: every fault of each kind is scheduled, in order of when it
// is due, between 5% and 90% of the operations; the same seed gives the
// same schedule.
func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		ops    int
		counts []int
	}{{120, []int{4, 3, 1, 1}}, {2000, []int{15, 40, 3}}, {1, []int{2}}} {
		fs := Schedule(rand.New(rand.NewPCG(7, 0)), tc.ops, tc.counts...)
		again := Schedule(rand.New(rand.NewPCG(7, 0)), tc.ops, tc.counts...)
		got := make([]int, len(tc.counts))
		for i, f := range fs {
			got[f.Kind]++
			if i > 0 && f.At < fs[i-1].At {
				t.Errorf("ops %d: fault %d due at %d, before the one ahead of it (%d)", tc.ops, i, f.At, fs[i-1].At)
			}
			if f.At < tc.ops/20 || f.At > max(tc.ops/20, tc.ops*90/100) {
				t.Errorf("ops %d: fault due at %d, outside 5%%-90%%", tc.ops, f.At)
			}
			if again[i] != f {
				t.Errorf("ops %d: the same seed scheduled %+v, then %+v", tc.ops, f, again[i])
			}
		}
		for k, n := range tc.counts {
			if got[k] != n {
				t.Errorf("ops %d: %d faults of kind %d, want %d", tc.ops, got[k], k, n)
			}
		}
	}
}

// TestAnswered: an honest 5xx is counted under its class and answers no
// operation; any other answer outside the operation's contract is
// unexpected; no answer is counted as such.
func TestAnswered(t *testing.T) {
	r := New(Options{Seed: 1, Users: []User{{Name: "alice"}}, Honest: func(a Answer) string {
		if a.Status == http.StatusServiceUnavailable && a.Header.Get("Retry-After") != "" {
			return "503 Retry-After"
		}
		return ""
	}})
	u := r.users[0]
	retryAfter := http.Header{"Retry-After": {"1"}}
	for _, tc := range []struct {
		a    Answer
		err  error
		want bool
	}{
		{Answer{Status: http.StatusAccepted}, nil, true},
		{Answer{Status: http.StatusServiceUnavailable, Header: retryAfter}, nil, false},
		{Answer{Status: http.StatusInternalServerError}, nil, false},
		{Answer{Status: http.StatusConflict}, nil, false},
		{Answer{}, http.ErrHandlerTimeout, false},
	} {
		if got := r.answered(u, "create", tc.a, tc.err, http.StatusAccepted); got != tc.want {
			t.Errorf("%d (%v): answered %v, want %v", tc.a.Status, tc.err, got, tc.want)
		}
	}
	f := r.Figures()
	want := map[string]int{"2xx": 1, "503 Retry-After": 1, "5xx": 1, "4xx": 1, "unanswered": 1}
	for k, n := range want {
		if f.ByClass[k] != n {
			t.Errorf("class %q counted %d, want %d (%v)", k, f.ByClass[k], n, f.ByClass)
		}
	}
	if f.Requests != 5 || len(r.Unexpected()) != 2 {
		t.Errorf("%d requests, unexpected %q: want 5 and the 500 and the 409", f.Requests, r.Unexpected())
	}
}
