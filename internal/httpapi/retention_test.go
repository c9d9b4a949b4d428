package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestRetentionContract: a template's retention as the API takes and shows
// it (every exchange checked against docs/openapi.yaml): a bad one is a
// 422 naming the field; an instance shows the retention it was created
// under (the template's, else the deployment's) and, once ended, delete_at
// counted from then; a start clears it; at delete_at berth's delete is
// requested with the reason "retention reached", by berth.
func TestRetentionContract(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("Refused", func(t *testing.T) { testRetentionRefused(t, newAPI(t, b, 50)) })
		t.Run("Template", func(t *testing.T) { testRetentionOfTemplate(t, newAPI(t, b, 50)) })
		t.Run("Deployment", func(t *testing.T) {
			a := newAPIManager(t, b, func(o *manager.Options) {
				o.Lifetimes = manager.LifetimeDefaults{StoppedRetention: 36 * time.Hour, FailedRetention: 240 * time.Hour}
			}, nil)
			in := a.create(alice, `{"template":"busybox"}`)
			if in.Retention == nil || *in.Retention != (container.Retention{Stopped: "36h", Failed: "240h"}) || in.DeleteAt != nil {
				t.Fatalf("created under the deployment's retention: retention %+v, delete_at %v", in.Retention, in.DeleteAt)
			}
			a.mustStatus(a.do("PUT", "/api/templates/own", admin, `{"runtime":"docker","image":"x","retention":{"failed":"1h"}}`, nil), http.StatusCreated)
			own := a.create(alice, `{"template":"own"}`)
			if own.Retention == nil || *own.Retention != (container.Retention{Failed: "1h"}) {
				t.Fatalf("a template's own retention is taken whole, not merged with the deployment's: %+v", own.Retention)
			}
		})
		t.Run("Off", func(t *testing.T) {
			a := newAPI(t, b, 50)
			in := a.create(alice, `{"template":"busybox"}`)
			a.drive(in.ID, fsm.Running)
			a.mustStatus(a.do("POST", "/api/containers/"+in.ID+"/stop", alice, "", nil), http.StatusAccepted)
			a.drive(in.ID, fsm.Stopped)
			got := decode[container.Instance](t, a.mustStatus(a.do("GET", "/api/containers/"+in.ID, alice, "", nil), http.StatusOK))
			if got.Retention != nil || got.DeleteAt != nil {
				t.Fatalf("no retention anywhere: a stopped instance shows retention %+v, delete_at %v; want neither", got.Retention, got.DeleteAt)
			}
		})
		t.Run("Reached", func(t *testing.T) { testRetentionReached(t, newAPI(t, b, 50)) })
	})
}

func testRetentionRefused(t *testing.T, a *api) {
	const d = `"runtime":"docker","image":"x"`
	for _, tc := range []struct{ name, body, field string }{
		{"empty", `{` + d + `,"retention":{}}`, "retention"},
		{"not a duration", `{` + d + `,"retention":{"stopped":"a day"}}`, "retention.stopped"},
		{"fractional days", `{` + d + `,"retention":{"failed":"1.5d"}}`, "retention.failed"},
		{"zero", `{` + d + `,"retention":{"stopped":"0s"}}`, "retention.stopped"},
		{"negative", `{` + d + `,"retention":{"failed":"-1h"}}`, "retention.failed"},
	} {
		r := a.do("PUT", "/api/templates/kept", admin, tc.body, nil)
		if r.Code != http.StatusUnprocessableEntity || !problemNames(r, tc.field) {
			t.Errorf("%s: status %d, want 422 naming %q: %s", tc.name, r.Code, tc.field, r.Body)
		}
	}
}

func testRetentionOfTemplate(t *testing.T, a *api) {
	body := `{"runtime":"docker","image":"berth-test/busybox:1","retention":{"stopped":"24h","failed":"7d"}}`
	a.mustStatus(a.do("PUT", "/api/templates/kept", admin, body, nil), http.StatusCreated)
	tpl := decode[container.Template](t, a.mustStatus(a.do("GET", "/api/templates/kept", admin, "", nil), http.StatusOK))
	want := container.Retention{Stopped: "24h", Failed: "7d"}
	if tpl.Retention == nil || *tpl.Retention != want {
		t.Fatalf("template's retention read back: %+v, want %+v", tpl.Retention, want)
	}
	in := a.create(alice, `{"template":"kept"}`)
	if in.Retention == nil || *in.Retention != want || in.DeleteAt != nil {
		t.Fatalf("created: retention %+v, delete_at %v; want %+v and none", in.Retention, in.DeleteAt, want)
	}
	a.drive(in.ID, fsm.Running)
	a.mustStatus(a.do("POST", "/api/containers/"+in.ID+"/stop", alice, "", nil), http.StatusAccepted)
	a.drive(in.ID, fsm.Stopped)
	got := decode[container.Instance](t, a.mustStatus(a.do("GET", "/api/containers/"+in.ID, alice, "", nil), http.StatusOK))
	if got.DeleteAt == nil || !got.DeleteAt.Equal(got.UpdatedAt.Add(24*time.Hour)) {
		t.Fatalf("stopped: delete_at %v, updated_at %v; want 24h after the stop's write", got.DeleteAt, got.UpdatedAt)
	}
	started := decode[container.Instance](t, a.mustStatus(a.do("POST", "/api/containers/"+in.ID+"/start", alice, "", nil), http.StatusAccepted))
	if started.DeleteAt != nil || started.Retention == nil || *started.Retention != want {
		t.Fatalf("started again: delete_at %v, retention %+v; want none and %+v", started.DeleteAt, started.Retention, want)
	}
	a.drive(in.ID, fsm.Starting)
	a.drive(in.ID, fsm.Running)
	a.drive(in.ID, fsm.Failed)
	got = decode[container.Instance](t, a.mustStatus(a.do("GET", "/api/containers/"+in.ID, alice, "", nil), http.StatusOK))
	if got.DeleteAt == nil || !got.DeleteAt.Equal(got.UpdatedAt.Add(7*24*time.Hour)) {
		t.Fatalf("failed: delete_at %v, updated_at %v; want 7d after the failure's write", got.DeleteAt, got.UpdatedAt)
	}
}

// testRetentionReached: a retention of a nanosecond is reached by the time
// anything reads the stopped instance, so Expire (as the timers call it)
// acts at once.
func testRetentionReached(t *testing.T, a *api) {
	a.mustStatus(a.do("PUT", "/api/templates/brief", admin,
		`{"runtime":"docker","image":"berth-test/busybox:1","retention":{"stopped":"1ns"}}`, nil), http.StatusCreated)
	in := a.create(alice, `{"template":"brief"}`)
	a.drive(in.ID, fsm.Running)
	a.mustStatus(a.do("POST", "/api/containers/"+in.ID+"/stop", alice, "", nil), http.StatusAccepted)
	stopped := a.drive(in.ID, fsm.Stopped)
	if stopped.DeleteAt == nil {
		t.Fatal("stopped under a retention: no delete_at")
	}
	outcome, err := a.m.Expire(context.Background(), in.ID, *stopped.DeleteAt)
	if err != nil || outcome != manager.ExpiryActed {
		t.Fatalf("Expire at delete_at: %v, %v; want acted", outcome, err)
	}
	got := decode[container.Instance](t, a.mustStatus(a.do("GET", "/api/containers/"+in.ID, alice, "", nil), http.StatusOK))
	if got.Status != fsm.DeletePending || got.StatusReason != container.ReasonRetentionReached {
		t.Fatalf("after the retention: %s (%q), want %s (%q)", got.Status, got.StatusReason, fsm.DeletePending, container.ReasonRetentionReached)
	}
	events := decode[struct{ Items []container.Event }](t, a.mustStatus(a.do("GET", "/api/containers/"+in.ID+"/events", alice, "", nil), http.StatusOK))
	last := events.Items[len(events.Items)-1]
	if last.Type != "ContainerDeleteRequested" || last.Message != container.ReasonRetentionReached || last.Actor != container.ActorSystem {
		t.Fatalf("last event %+v, want ContainerDeleteRequested %q by %s", last, container.ReasonRetentionReached, container.ActorSystem)
	}
	if outcome, err := a.m.Expire(context.Background(), in.ID, *stopped.DeleteAt); err != nil || outcome != manager.ExpiryMoot {
		t.Fatalf("Expire again: %v, %v; want moot", outcome, err)
	}
}
