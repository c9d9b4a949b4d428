package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/httpapi/apicontract"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

type webhookJSON struct {
	ID        string   `json:"id"`
	Owner     string   `json:"owner"`
	AllOwners bool     `json:"all_owners"`
	URL       string   `json:"url"`
	Template  string   `json:"template"`
	Statuses  []string `json:"statuses"`
	Secret    string   `json:"secret"`
}

// newWebhookAPI is the API with a manager holding the receiver policy g.
func newWebhookAPI(t *testing.T, b teststores.Backend, g webhook.Guard) *api {
	t.Helper()
	return newWebhookAPILogging(t, b, g, io.Discard)
}

// newWebhookAPILogging is newWebhookAPI with the server's log written to
// log.
func newWebhookAPILogging(t *testing.T, b teststores.Backend, g webhook.Guard, log io.Writer) *api {
	t.Helper()
	s := b.Open(t, time.Now)
	logger := slog.New(slog.NewTextHandler(log, nil))
	m := manager.New(manager.Options{Store: s, Runtimes: []string{"docker"}, Logger: logger, Webhooks: g})
	h := httpapi.New(httpapi.Options{Manager: m, Logger: logger, Auth: httpapi.TokenAuth([]httpapi.TokenUser{
		{Token: admin, User: "root", Admin: true}, {Token: alice, User: "alice"}, {Token: bob, User: "bob"},
	})})
	return &api{t: t, h: apicontract.Handler(t, h), m: m, store: s}
}

func TestWebhookSubscriptions(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newWebhookAPI(t, b, webhook.Guard{})
		r := a.mustStatus(a.do("POST", "/api/webhooks", alice,
			`{"url":"https://93.184.216.34/hook","template":"busybox","statuses":["running","failed"]}`, nil), http.StatusCreated)
		created := decode[webhookJSON](t, r)
		if !strings.HasPrefix(created.Secret, "whsec_") || created.ID == "" || created.Owner != "alice" || created.AllOwners ||
			created.URL != "https://93.184.216.34/hook" || created.Template != "busybox" || len(created.Statuses) != 2 {
			t.Fatalf("created = %+v", created)
		}
		if loc := r.Header().Get("Location"); loc != "/api/webhooks/"+created.ID {
			t.Errorf("Location = %q", loc)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control = %q; want no-store on the answer holding the secret", cc)
		}
		// The secret is shown once: no read returns it.
		for _, path := range []string{"/api/webhooks", "/api/webhooks/" + created.ID} {
			body := a.mustStatus(a.do("GET", path, alice, "", nil), http.StatusOK).Body.String()
			if strings.Contains(body, created.Secret) || strings.Contains(body, "whsec_") || strings.Contains(body, `"secret"`) {
				t.Errorf("GET %s shows the secret: %s", path, body)
			}
		}
		// Owners see only their own; another's is 404.
		a.mustStatus(a.do("GET", "/api/webhooks/"+created.ID, bob, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("DELETE", "/api/webhooks/"+created.ID, bob, "", nil), http.StatusNotFound)
		if l := decode[struct{ Items []webhookJSON }](t, a.mustStatus(a.do("GET", "/api/webhooks", bob, "", nil), http.StatusOK)); len(l.Items) != 0 {
			t.Errorf("bob lists %+v", l.Items)
		}
		// An admin's subscription matches every owner; an admin lists all.
		adm := decode[webhookJSON](t, a.mustStatus(a.do("POST", "/api/webhooks", admin, `{"url":"https://[2606:2800:220:1::1]/all"}`, nil), http.StatusCreated))
		if !adm.AllOwners || len(adm.Statuses) != 0 {
			t.Errorf("admin's subscription = %+v; want all_owners and no status filter", adm)
		}
		if l := decode[struct{ Items []webhookJSON }](t, a.mustStatus(a.do("GET", "/api/webhooks", admin, "", nil), http.StatusOK)); len(l.Items) != 2 ||
			l.Items[0].ID != created.ID || l.Items[1].ID != adm.ID {
			t.Errorf("admin lists %+v; want alice's then the admin's", l.Items)
		}
		if l := decode[struct{ Items []webhookJSON }](t, a.mustStatus(a.do("GET", "/api/webhooks", alice, "", nil), http.StatusOK)); len(l.Items) != 1 {
			t.Errorf("alice lists %+v; want her one", l.Items)
		}
		a.mustStatus(a.do("GET", "/api/webhooks/"+created.ID, admin, "", nil), http.StatusOK)
		a.mustStatus(a.do("DELETE", "/api/webhooks/"+created.ID, alice, "", nil), http.StatusNoContent)
		a.mustStatus(a.do("GET", "/api/webhooks/"+created.ID, alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("DELETE", "/api/webhooks/"+created.ID, alice, "", nil), http.StatusNotFound)
		a.mustStatus(a.do("GET", "/api/webhooks", "", "", nil), http.StatusUnauthorized)
	})
}

func TestWebhookRefusedAddresses(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newWebhookAPI(t, b, webhook.Guard{})
		for _, tc := range []struct {
			body  string
			code  int
			field string
		}{
			{`{"url":"http://127.0.0.1:8080/hook"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"http://169.254.169.254/latest/meta-data/"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"http://[::1]/"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"http://10.0.0.1/"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"http://192.168.0.10/"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"http://localhost:9000/"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"file:///etc/passwd"}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":""}`, http.StatusUnprocessableEntity, "url"},
			{`{"url":"https://93.184.216.34/","statuses":["runnin"]}`, http.StatusUnprocessableEntity, "statuses[0]"},
			{`{"url":"https://93.184.216.34/","statuses":["failed","failed"]}`, http.StatusUnprocessableEntity, "statuses[1]"},
			{`{"url":"https://93.184.216.34/","secret":"whsec_mine"}`, http.StatusBadRequest, ""},
		} {
			r := a.mustStatus(a.do("POST", "/api/webhooks", alice, tc.body, nil), tc.code)
			if tc.field != "" && (len(r.problem.Errors) == 0 || r.problem.Errors[0].Field != tc.field) {
				t.Errorf("POST %s: errors %+v; want one on %s", tc.body, r.problem.Errors, tc.field)
			}
		}
		if ws, _ := a.store.ListWebhooks(t.Context(), ""); len(ws) != 0 {
			t.Errorf("refused subscriptions were stored: %+v", ws)
		}
	})
}

// resolvesTo answers every name with one address.
type resolvesTo string

func (r resolvesTo) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr(string(r))}, nil
}

// TestWebhookRefusalKeepsResolvedAddressesInTheLog: the 422 of a name
// that resolves to a refused range names the rule but not the address,
// which would tell any user what names resolve to inside the deployment's
// network; the server's log has it for operators.
func TestWebhookRefusalKeepsResolvedAddressesInTheLog(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		var log bytes.Buffer
		a := newWebhookAPILogging(t, b, webhook.Guard{Resolver: resolvesTo("10.20.30.40")}, &log)
		r := a.mustStatus(a.do("POST", "/api/webhooks", alice, `{"url":"https://db.corp.example/hook"}`, nil), http.StatusUnprocessableEntity)
		if body := r.Body.String(); strings.Contains(body, "10.20.30.40") || !strings.Contains(body, "refused range (private)") {
			t.Errorf("422 body %s: want the rule (private) and not the address", body)
		}
		if !strings.Contains(log.String(), "address=10.20.30.40") {
			t.Errorf("the server's log lacks the resolved address:\n%s", log.String())
		}
	})
}

func TestWebhookAllowedNetworkAndLimit(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		g, err := webhook.NewGuard([]string{"127.0.0.0/8"})
		if err != nil {
			t.Fatal(err)
		}
		a := newWebhookAPI(t, b, g)
		for range store.MaxWebhooksPerOwner {
			a.mustStatus(a.do("POST", "/api/webhooks", alice, `{"url":"http://127.0.0.1:9/hook"}`, nil), http.StatusCreated)
		}
		a.mustStatus(a.do("POST", "/api/webhooks", alice, `{"url":"http://localhost:9/hook"}`, nil), http.StatusConflict)
		a.mustStatus(a.do("POST", "/api/webhooks", bob, `{"url":"http://localhost:9/hook"}`, nil), http.StatusCreated)
		// Allowing loopback allows nothing else.
		a.mustStatus(a.do("POST", "/api/webhooks", bob, `{"url":"http://169.254.169.254/"}`, nil), http.StatusUnprocessableEntity)
	})
}
