package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/metrics/promsink"
	"github.com/berth-io/berth/internal/store/teststores"
)

// scraperToken is the test's server.metrics_token.
const scraperToken = "tok-scraper"

// TestMetricsRoute: GET /metrics is for admins and the scraper's token,
// 501 where no endpoint is configured, and counts the requests answered.
func TestMetricsRoute(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		sink := promsink.New()
		endpoint, err := promsink.Handler(sink)
		if err != nil {
			t.Fatal(err)
		}
		a := newAPIWith(t, b, 10, func(o *httpapi.Options) {
			o.MetricsEndpoint, o.MetricsToken, o.Metrics = endpoint, scraperToken, metrics.New(io.Discard, nil, sink)
		})
		a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox","name":"m1"}`, nil), http.StatusAccepted)
		for _, tc := range []struct {
			name, method, token string
			want                int
		}{
			{"no token", "GET", "", http.StatusUnauthorized},
			{"a wrong token", "GET", "tok-wrong", http.StatusUnauthorized},
			{"a user", "GET", alice, http.StatusForbidden},
			{"POST", "POST", admin, http.StatusMethodNotAllowed},
			{"an admin", "GET", admin, http.StatusOK},
			{"the scraper", "GET", scraperToken, http.StatusOK},
		} {
			r := a.do(tc.method, httpapi.MetricsPath, tc.token, "", nil)
			if r.Code != tc.want {
				t.Errorf("%s: %d, want %d: %s", tc.name, r.Code, tc.want, r.Body)
				continue
			}
			if r.Code != http.StatusOK {
				continue
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(r.Body.String()))
			if err != nil {
				t.Fatalf("%s: the body does not parse: %v", tc.name, err)
			}
			created, refused := 0.0, 0.0
			for _, m := range mfs["berth_http_requests_total"].GetMetric() {
				l := map[string]string{}
				for _, lp := range m.Label {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["route"] == httpapi.MetricsPath && l["code"] == "401" {
					refused += m.Counter.GetValue()
				}
				if l["route"] == "/api/containers" && l["method"] == "POST" && l["code"] == "202" {
					created += m.Counter.GetValue()
				}
			}
			if created != 1 || refused != 2 {
				t.Errorf("%s: counted %v creates accepted and %v unauthenticated scrapes, want 1 and 2", tc.name, created, refused)
			}
			if mfs["go_goroutines"] == nil {
				t.Errorf("%s: no go_goroutines", tc.name)
			}
		}
	})
}

// TestMetricsNotServed: without an endpoint (the api function on AWS) the
// route answers an admin 501, and still refuses everyone else first.
func TestMetricsNotServed(t *testing.T) {
	a := newAPI(t, teststores.All[0], 10)
	a.mustStatus(a.do("GET", httpapi.MetricsPath, alice, "", nil), http.StatusForbidden)
	a.mustStatus(a.do("GET", httpapi.MetricsPath, scraperToken, "", nil), http.StatusUnauthorized)
	a.mustStatus(a.do("GET", httpapi.MetricsPath, admin, "", nil), http.StatusNotImplemented)
}
