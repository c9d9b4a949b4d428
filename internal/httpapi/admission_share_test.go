package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestCreateShare: with container.create_queue_max_pending_per_owner 2 of
// a total of 10, alice's third create is 429 with Retry-After and a detail
// about her own creates, and bob's create is still accepted.
func TestCreateShare(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		s := b.Open(t, time.Now)
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		m := manager.New(manager.Options{Store: s, MaxPending: 10, MaxPendingPerOwner: 2, Runtimes: []string{"docker"},
			BindRoots: []string{"/srv/berth"}, Logger: logger})
		h := httpapi.New(httpapi.Options{Manager: m, Logger: logger, Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: admin, User: "root", Admin: true}, {Token: alice, User: "alice"}, {Token: bob, User: "bob"},
		})})
		a := &api{t: t, h: apicontract.Handler(t, h), m: m, store: s}
		a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusCreated)
		a.create(alice, `{"template":"busybox"}`)
		a.create(alice, `{"template":"busybox"}`)
		r := a.mustStatus(a.do("POST", "/api/containers", alice, `{"template":"busybox"}`, nil), http.StatusTooManyRequests)
		if r.Header().Get("Retry-After") == "" || r.problem.RetryAfterSeconds < 1 || !strings.Contains(r.problem.Detail, "your creates") {
			t.Errorf("alice's create beyond her share: %v %+v", r.Header(), r.problem)
		}
		a.create(bob, `{"template":"busybox"}`)
	})
}
