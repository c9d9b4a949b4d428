package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestLogsRoute: the logs route's refusals, which come before any runtime
// is asked: others' containers are 404, bad options 400, and a deployment
// without a LogSource (the api function on AWS) answers 501.
func TestLogsRoute(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		in := a.create(alice, `{"template":"busybox"}`)
		p := "/api/containers/" + in.ID + "/logs"
		a.mustStatus(a.do("GET", p, bob, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", "/api/containers/nosuch/logs", alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", p, "", "", nil), http.StatusUnauthorized)
		a.mustStatus(a.do("POST", p, alice, "", nil), http.StatusMethodNotAllowed)
		for _, q := range []string{"tail=0", "tail=10001", "tail=-1", "since=soon", "stream=stdin", "timestamps=yes", "follow=2", "format=html"} {
			r := a.mustStatus(a.do("GET", p+"?"+q, alice, "", nil), http.StatusBadRequest)
			if field, _, _ := strings.Cut(q, "="); len(r.problem.Errors) != 1 || r.problem.Errors[0].Field != field {
				t.Errorf("%s: errors %+v", q, r.problem.Errors)
			}
		}
		for _, tok := range []string{alice, admin} {
			r := a.mustStatus(a.do("GET", p+"?tail=5&follow=true", tok, "", nil), http.StatusNotImplemented)
			if !strings.Contains(r.problem.Detail, "berth serve") {
				t.Errorf("501 detail: %q", r.problem.Detail)
			}
		}
	})
}

// TestLogsSince: since= is a time or a duration (else 400) within the
// bounds, from the Unix epoch to a day ahead (else 422, before any runtime
// is asked; Docker would fail on a time before 1970 and the caller see
// 503). A deployment without a LogSource answers a since it accepts 501.
func TestLogsSince(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		p := "/api/containers/" + a.create(alice, `{"template":"busybox"}`).ID + "/logs?since="
		now := time.Now().UTC()
		for _, tc := range []struct {
			since string
			want  int
		}{
			{"10m", http.StatusNotImplemented},
			{"1h30m", http.StatusNotImplemented},
			{"1970-01-01T00:00:00Z", http.StatusNotImplemented},
			{now.Format(time.RFC3339Nano), http.StatusNotImplemented},
			{now.Add(time.Hour).Format(time.RFC3339), http.StatusNotImplemented},
			{"soon", http.StatusBadRequest},
			{"10 minutes", http.StatusBadRequest},
			{"2026-13-01T00:00:00Z", http.StatusBadRequest},
			{"2562047h", http.StatusUnprocessableEntity},     // back before 1970
			{"2562048h", http.StatusUnprocessableEntity},     // past time.Duration
			{"99999999999h", http.StatusUnprocessableEntity}, // further past it
			{"-5m", http.StatusUnprocessableEntity},
			{"0", http.StatusUnprocessableEntity},
			{"0s", http.StatusUnprocessableEntity},
			{"1969-12-31T23:59:59Z", http.StatusUnprocessableEntity},
			{"0001-01-01T00:00:00Z", http.StatusUnprocessableEntity},
			{now.Add(25 * time.Hour).Format(time.RFC3339), http.StatusUnprocessableEntity},
			{"9999-12-31T23:59:59Z", http.StatusUnprocessableEntity},
		} {
			r := a.mustStatus(a.do("GET", p+url.QueryEscape(tc.since), alice, "", nil), tc.want)
			if tc.want != http.StatusNotImplemented && (len(r.problem.Errors) != 1 || r.problem.Errors[0].Field != "since") {
				t.Errorf("since=%s: errors %+v; want one on since", tc.since, r.problem.Errors)
			}
		}
	})
}

// TestLogsOfAContainerNotOnItsRuntime: an instance whose container is not
// on its runtime (pending, never created) has no output: 409 with its
// status, from a real Docker engine's answer.
func TestLogsOfAContainerNotOnItsRuntime(t *testing.T) {
	rt, err := docker.New(config.Docker{Hosts: []config.DockerHost{{Name: "h1", Endpoint: testenv.DockerHost(t)}}}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runtime.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPIWith(t, b, 50, func(o *httpapi.Options) { o.Logs = res })
		in := a.create(alice, `{"template":"busybox"}`)
		r := a.mustStatus(a.do("GET", "/api/containers/"+in.ID+"/logs", alice, "", nil), http.StatusConflict)
		if r.problem.CurrentStatus != fsm.Pending {
			t.Errorf("409 current_status %q", r.problem.CurrentStatus)
		}
		a.mustStatus(a.do("GET", "/api/containers/"+in.ID+"/logs?follow=true", admin, "", nil), http.StatusConflict)
		a.mustStatus(a.do("GET", "/api/containers/"+in.ID+"/logs", bob, "", nil), http.StatusNotFound)
	})
}
