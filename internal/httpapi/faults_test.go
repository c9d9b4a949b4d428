package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestHTTPFaults: the small faults an attacker found, each answered as a
// clean problem or accepted as the RFCs say.
func TestHTTPFaults(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		in := a.create(alice, `{"template":"busybox"}`)
		in = a.drive(in.ID, fsm.Running)
		p := "/api/containers/" + in.ID
		cases := []struct {
			name, method, path string
			headers            map[string]string
			want               int
		}{
			{"double slash", "GET", "/" + p, nil, 404},
			{"dot-dot", "GET", "/../", nil, 404},
			{"dot-dot inside", "GET", "/api/x/.." + p, nil, 404},
			{"dot segment", "GET", "/api/./containers", nil, 404},
			{"malformed cursor escape", "GET", "/api/containers?cursor=%%%", nil, 400},
			{"malformed escape elsewhere", "GET", p + "/events?limit=%zz", nil, 400},
			{"owner self", "GET", "/api/containers?owner=alice", nil, 200},
			{"owner other", "GET", "/api/containers?owner=bob", nil, 400},
			{"If-Match star", "POST", p + "/stop", map[string]string{"If-Match": "*"}, 202},
		}
		for _, tc := range cases {
			r := a.do(tc.method, tc.path, alice, "", tc.headers)
			if r.Code != tc.want {
				t.Errorf("%s: %s %s = %d, want %d: %s", tc.name, tc.method, tc.path, r.Code, tc.want, r.Body)
			}
			if r.Header().Get("Location") != "" {
				t.Errorf("%s: redirected to %q", tc.name, r.Header().Get("Location"))
			}
		}
	})
}

// TestOwnerSelfListsOwn: a non-admin's ?owner=<self> lists exactly what
// no filter lists.
func TestOwnerSelfListsOwn(t *testing.T) {
	a := newAPI(t, teststores.All[0], 50)
	a.create(alice, `{"template":"busybox"}`)
	a.create(bob, `{"template":"busybox"}`)
	got := decode[list[struct{ Owner string }]](t, a.mustStatus(a.do("GET", "/api/containers?owner=alice", alice, "", nil), 200))
	if len(got.Items) != 1 || got.Items[0].Owner != "alice" {
		t.Fatalf("alice ?owner=alice: %+v", got.Items)
	}
}

// TestTemplateLabelsWin: a user label cannot replace one the template
// sets (on the resolved spec the runtime labels the container from).
func TestTemplateLabelsWin(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		in := a.create(alice, `{"template":"busybox","labels":{"tier":"mine","extra":"x"}}`)
		got, err := a.store.GetInstance(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Labels["tier"] != "test" || got.Spec.Labels["extra"] != "x" {
			t.Fatalf("spec labels %v: want the template's tier=test and the user's extra=x", got.Spec.Labels)
		}
	})
}

// TestAccessLogUser: the access log names the authenticated caller.
func TestAccessLogUser(t *testing.T) {
	var buf testenv.SyncBuffer
	a := newAPIWith(t, teststores.All[0], 50, func(o *httpapi.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	a.mustStatus(a.do("GET", "/api/containers", alice, "", nil), 200)
	a.mustStatus(a.do("GET", "/api/containers", "wrong", "", nil), 401)
	var users []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct {
			Msg, Path, User string
			Status          int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "request" && rec.Path == "/api/containers" {
			users = append(users, rec.User)
		}
	}
	if len(users) != 2 || users[0] != "alice" || users[1] != "" {
		t.Fatalf("access log users %q, want [alice, \"\"]", users)
	}
}

// TestWaitersCapped: GET /wait beyond MaxWaiters is 429 with Retry-After,
// and a freed slot serves the next waiter.
func TestWaitersCapped(t *testing.T) {
	a := newAPIWith(t, teststores.All[0], 50, func(o *httpapi.Options) { o.MaxWaiters = 1 })
	in := a.create(alice, `{"template":"busybox"}`)
	p := "/api/containers/" + in.ID + "/wait?status=running"
	first := make(chan *resp, 1)
	startFirst := func() { go func() { first <- a.do("GET", p+"&timeout=20s", alice, "", nil) }() }
	startFirst()
	// The second waiter is refused once the first holds the only slot;
	// until then it times out (408) and asks again. If the second took
	// the slot first, the first was refused: it asks again.
	var refused *resp
	for refused == nil {
		select {
		case r := <-first:
			if r.Code != http.StatusTooManyRequests {
				t.Fatalf("first waiter returned early: %d %s", r.Code, r.Body)
			}
			startFirst()
		default:
		}
		switch r := a.do("GET", p+"&timeout=20ms", bob, "", nil); r.Code {
		case http.StatusTooManyRequests:
			refused = r
		case http.StatusRequestTimeout, http.StatusNotFound:
		default:
			t.Fatalf("second waiter: %d %s", r.Code, r.Body)
		}
	}
	if refused.Header().Get("Retry-After") == "" || refused.problem.RetryAfterSeconds < 1 {
		t.Fatalf("429 without Retry-After: %v %s", refused.Header(), refused.Body)
	}
	a.drive(in.ID, fsm.Running)
	if r := <-first; r.Code != 200 {
		t.Fatalf("first waiter: %d %s", r.Code, r.Body)
	}
	a.mustStatus(a.do("GET", p+"&timeout=1s", alice, "", nil), 200)
}

// TestWaitersCappedPerCaller: a caller at MaxWaitersPerCaller gets 429 for
// one more wait, while another caller's wait is still answered, well below
// MaxWaiters; the caller's freed places serve it again.
func TestWaitersCappedPerCaller(t *testing.T) {
	const perCaller = 2
	a := newAPIWith(t, teststores.All[0], 50, func(o *httpapi.Options) { o.MaxWaiters, o.MaxWaitersPerCaller = 10, perCaller })
	mine := a.create(alice, `{"template":"busybox"}`)
	theirs := a.create(bob, `{"template":"busybox"}`)
	a.drive(theirs.ID, fsm.Running)
	p := "/api/containers/" + mine.ID + "/wait?status=running"
	held := make(chan *resp, perCaller)
	hold := func() { go func() { held <- a.do("GET", p+"&timeout=20s", alice, "", nil) }() }
	for range perCaller {
		hold()
	}
	// alice's extra wait is refused once her long waits hold her places;
	// until then it times out (408) and asks again. A long wait refused
	// because the extra one held a place asks again.
	var refused *resp
	for deadline := time.Now().Add(time.Minute); refused == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("alice's wait beyond her %d was never refused", perCaller)
		}
		select {
		case r := <-held:
			if r.Code != http.StatusTooManyRequests {
				t.Fatalf("a long wait returned early: %d %s", r.Code, r.Body)
			}
			hold()
		default:
		}
		switch r := a.do("GET", p+"&timeout=20ms", alice, "", nil); r.Code {
		case http.StatusTooManyRequests:
			refused = r
		case http.StatusRequestTimeout:
		default:
			t.Fatalf("alice's extra wait: %d %s", r.Code, r.Body)
		}
	}
	if refused.Header().Get("Retry-After") == "" || !strings.Contains(refused.problem.Detail, "your") {
		t.Fatalf("429 without Retry-After or not about the caller's own waits: %v %s", refused.Header(), refused.Body)
	}
	// bob is answered while alice is at her limit.
	if got := decode[container.Instance](t, a.mustStatus(a.do("GET", "/api/containers/"+theirs.ID+"/wait?status=running&timeout=5s", bob, "", nil), 200)); got.ID != theirs.ID {
		t.Fatalf("bob's wait answered with %s", got.ID)
	}
	a.drive(mine.ID, fsm.Running)
	for range perCaller {
		if r := <-held; r.Code != 200 {
			t.Fatalf("alice's long wait: %d %s", r.Code, r.Body)
		}
	}
	a.mustStatus(a.do("GET", p+"&timeout=1s", alice, "", nil), 200)
}
