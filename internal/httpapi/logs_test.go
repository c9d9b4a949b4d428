package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

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
		for _, q := range []string{"tail=0", "tail=10001", "tail=-1", "since=soon", "since=-5m", "stream=stdin", "timestamps=yes", "follow=2", "format=html"} {
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
