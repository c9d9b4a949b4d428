package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/store/teststores"
)

// TestStatsRoute: the stats route's refusals, which come before any
// runtime is asked: others' containers are 404, other methods 405, and a
// deployment without a StatsSource (the api function on AWS) answers 501.
// (Readings of real containers: cmd/berth TestServeStats, and the runtimes'
// conformance case.)
func TestStatsRoute(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		in := a.create(alice, `{"template":"busybox"}`)
		p := "/api/containers/" + in.ID + "/stats"
		a.mustStatus(a.do("GET", p, bob, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", "/api/containers/nosuch/stats", alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", p, "", "", nil), http.StatusUnauthorized)
		a.mustStatus(a.do("POST", p, alice, "", nil), http.StatusMethodNotAllowed)
		for _, tok := range []string{alice, admin} {
			r := a.mustStatus(a.do("GET", p, tok, "", nil), http.StatusNotImplemented)
			if !strings.Contains(r.problem.Detail, "berth serve") {
				t.Errorf("501 detail: %q", r.problem.Detail)
			}
		}
	})
}
