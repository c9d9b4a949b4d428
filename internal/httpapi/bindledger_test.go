package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestBindLedgerRetire: the reproduction 1 through the API. A
// template made read-only after its containers could write does not make
// room below its bind source; the 422 names the retire route; a retire is
// refused while a template or a container mounts the pattern writable,
// admins only, and once done lets the inner template in.
func TestBindLedgerRetire(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		// The harness's busybox mounts /srv/berth/$USERID writable, which
		// would contain everything below: with no container made from it,
		// delete it and retire its entry.
		a.mustStatus(a.do("DELETE", "/api/templates/busybox", admin, "", nil), http.StatusNoContent)
		var ledger container.BindLedger
		if err := json.Unmarshal(a.mustStatus(a.do("GET", "/api/bind-ledger", admin, "", nil), http.StatusOK).Body.Bytes(), &ledger); err != nil {
			t.Fatal(err)
		}
		if len(ledger.Entries) != 1 || ledger.Entries[0].Pattern != "/srv/berth/$USERID" || !ledger.Entries[0].Writable {
			t.Fatalf("ledger = %+v, want busybox's writable entry", ledger)
		}
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+ledger.Entries[0].ID, admin, "", nil), http.StatusOK)
		const homew = `{"runtime":"docker","image":"x","volumes":[{"source":"/srv/berth/h/$USERID","target":"/home","type":"bind"%s}]}`
		const datat = `{"runtime":"docker","image":"x","volumes":[{"source":"/srv/berth/h/$USERID/data","target":"/data","type":"bind"}]}`
		a.mustStatus(a.do("PUT", "/api/templates/homew", admin, strings.Replace(homew, "%s", "", 1), nil), http.StatusCreated)
		bobs := a.create(bob, `{"template":"homew"}`)

		r := a.mustStatus(a.do("PUT", "/api/templates/datat", admin, datat, nil), http.StatusUnprocessableEntity)
		if strings.Contains(r.Body.String(), "read_only") {
			t.Errorf("the 422 advises read_only for a pattern containers could already write: %s", r.Body)
		}
		ledger = container.BindLedger{}
		if err := json.Unmarshal(a.mustStatus(a.do("GET", "/api/bind-ledger", admin, "", nil), http.StatusOK).Body.Bytes(), &ledger); err != nil {
			t.Fatal(err)
		}
		if len(ledger.Entries) != 1 || ledger.Entries[0].Pattern != "/srv/berth/h/$USERID" || !ledger.Entries[0].Writable {
			t.Fatalf("ledger = %+v", ledger)
		}
		id := ledger.Entries[0].ID
		if !strings.Contains(r.Body.String(), "DELETE /api/bind-ledger/"+id) {
			t.Errorf("the 422 does not name the retire route of %s: %s", id, r.Body)
		}
		a.mustStatus(a.do("GET", "/api/bind-ledger", alice, "", nil), http.StatusForbidden)
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+id, alice, "", nil), http.StatusForbidden)
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/nope", admin, "", nil), http.StatusNotFound)
		// Stored writable: refused.
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+id, admin, "", nil), http.StatusConflict)

		// The admin follows the old advice: read_only. Still refused, and
		// bob's first container still mounts it writable: no retire.
		a.mustStatus(a.do("PUT", "/api/templates/homew", admin, strings.Replace(homew, "%s", `,"read_only":true`, 1), nil), http.StatusOK)
		a.mustStatus(a.do("PUT", "/api/templates/datat", admin, datat, nil), http.StatusUnprocessableEntity)
		r = a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+id, admin, "", nil), http.StatusConflict)
		if !strings.Contains(r.Body.String(), bobs.ID) {
			t.Errorf("the 409 does not name the instance that mounts it writable: %s", r.Body)
		}
		// The template deleted changes nothing either.
		a.mustStatus(a.do("DELETE", "/api/templates/homew", admin, "", nil), http.StatusNoContent)
		a.mustStatus(a.do("PUT", "/api/templates/datat", admin, datat, nil), http.StatusUnprocessableEntity)
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+id, admin, "", nil), http.StatusConflict)

		// Bob's container gone (and the host cleaned, by the admin): the
		// retire goes through, and the inner template is accepted.
		a.mustStatus(a.do("DELETE", "/api/containers/"+bobs.ID, bob, "", nil), http.StatusAccepted)
		inst := a.drive(bobs.ID, fsm.Deleting)
		if err := a.store.DeleteInstance(t.Context(), store.DeleteParams{ID: bobs.ID, ExpectVersion: inst.Version,
			Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, Actor: container.ActorSystem}}); err != nil {
			t.Fatal(err)
		}
		a.mustStatus(a.do("DELETE", "/api/bind-ledger/"+id, admin, "", nil), http.StatusOK)
		a.mustStatus(a.do("PUT", "/api/templates/datat", admin, datat, nil), http.StatusCreated)
	})
}
