package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store/teststores"
)

// TestHealthRoutes: through the function's own handler, /livez and
// /readyz answer anyone with a bare status, /healthz only admins, and a
// store that does not answer makes /readyz 503.
func TestHealthRoutes(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		s := b.Open(t, time.Now)
		cfg, err := loadConfig(func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		a := newAdapter(cfg, s, quietLogger(), nil)
		call := func(path, groups string) (int, string) {
			ev := fixtureEvent(t, "get", "")
			ev.RawPath, ev.RequestContext.HTTP.Path = path, path
			if groups == "" {
				ev.RequestContext.Authorizer = nil
			} else {
				ev.RequestContext.Authorizer.JWT.Claims["cognito:groups"] = groups
			}
			resp, err := a.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, resp.Body
		}
		for _, tc := range []struct {
			path, groups string
			want         int
			body         string
		}{
			{"/livez", "", 200, `"ok"`},
			{"/readyz", "", 200, `"ready"`},
			{"/healthz", "", 401, ""},
			{"/healthz", "[berth-users]", 403, ""},
			{"/healthz", "[berth-admin]", 200, "unfinished_creates"},
		} {
			if code, body := call(tc.path, tc.groups); code != tc.want || !strings.Contains(body, tc.body) {
				t.Errorf("%s (groups %q): %d %s, want %d with %s", tc.path, tc.groups, code, body, tc.want, tc.body)
			}
		}
		if b.Name == "bolt" {
			_ = s.(io.Closer).Close() // a store that no longer answers
			if code, body := call("/readyz", ""); code != 503 || strings.Contains(body, "closed") {
				t.Errorf("/readyz with the store down: %d %s", code, body)
			}
		}
	})
}
