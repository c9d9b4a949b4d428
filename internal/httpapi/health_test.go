package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestHealthProbes: /livez and /readyz answer anyone with a status and
// nothing more, only to GET and HEAD; /healthz is the admins' report.
func TestHealthProbes(t *testing.T) {
	const secret = "/var/lib/berth/berth.db: engine exploded"
	for _, ready := range []bool{true, false} {
		a := newAPIWith(t, teststores.All[0], 50, func(o *httpapi.Options) {
			// A report shaped as berth serve's and the api function's are (docs/openapi.yaml's HealthReport).
			status := map[bool]string{true: "ready", false: "not ready"}[ready]
			o.Health = func(context.Context) (bool, any) {
				return ready, map[string]any{"ok": ready, "status": status, "store": map[string]any{"ok": ready, "error": secret}}
			}
		})
		readyCode := map[bool]int{true: 200, false: 503}[ready]
		cases := []struct {
			method, path, token string
			want                int
		}{
			{"GET", "/livez", "", 200},
			{"HEAD", "/livez", "", 200},
			{"POST", "/livez", "", 405},
			{"GET", "/readyz", "", readyCode},
			{"HEAD", "/readyz", "", readyCode},
			{"DELETE", "/readyz", "", 405},
			{"GET", "/healthz", "", 401},
			{"GET", "/healthz", alice, 403},
			{"GET", "/healthz", admin, 200},
			{"PUT", "/healthz", admin, 405},
		}
		for _, tc := range cases {
			r := a.do(tc.method, tc.path, tc.token, "", nil)
			if r.Code != tc.want {
				t.Errorf("ready=%v %s %s: %d, want %d: %s", ready, tc.method, tc.path, r.Code, tc.want, r.Body)
			}
			if tc.path != "/healthz" && strings.Contains(r.Body.String(), "berth.db") {
				t.Errorf("%s %s shows internals: %s", tc.method, tc.path, r.Body)
			}
			if r.Code == 405 && r.Header().Get("Allow") == "" {
				t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
			}
		}
		if r := a.do("GET", "/healthz", admin, "", nil); !strings.Contains(r.Body.String(), "engine exploded") {
			t.Errorf("admins' report lacks the detail: %s", r.Body)
		}
	}
	// Without a HealthFunc (nothing to check) the process still answers /livez.
	a := newAPI(t, teststores.All[0], 50)
	a.mustStatus(a.do("GET", "/livez", "", "", nil), http.StatusOK)
	a.mustStatus(a.do("GET", "/readyz", "", "", nil), http.StatusNotFound)
}
