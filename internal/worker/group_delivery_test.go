package worker_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/notify/webhook/webhooktest"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestGroupFinishDeliveries: a group finish written through the manager
// is delivered, in the transaction of its last member's write (that
// member's own policy write, or a write of its fields alone when its
// action needs none), as group.finished with the finish's answer, to the
// subscriptions that match the group: the owner's unfiltered one, the
// owner's filtered on that group, an admin's; not the owner's filtered on
// another group or on statuses, not another owner's. The event bus gets
// "Group Finished". A reset is no finish: it is not delivered.
func TestGroupFinishDeliveries(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		f := newDeliveryFixture(t, b, true, func(o *manager.Options) { o.Groups = manager.GroupPolicies{ResetAllowed: true} })
		ctx, s, m, w, bus := f.ctx, f.s, f.m, f.w, f.bus
		rcv := webhooktest.NewReceiver(t)
		alice, bob, admin := identity.Caller{User: "alice"}, identity.Caller{User: "bob"}, identity.Caller{User: "root", Admin: true}
		subscribe := func(c identity.Caller, req manager.WebhookRequest) string {
			t.Helper()
			sub, err := m.CreateWebhook(ctx, c, req)
			if err != nil {
				t.Fatal(err)
			}
			rcv.SetSecret(req.URL[len(rcv.URL):], sub.Secret)
			return sub.ID
		}
		all := subscribe(alice, manager.WebhookRequest{URL: rcv.URL + "/all"})
		dag := subscribe(alice, manager.WebhookRequest{URL: rcv.URL + "/dag", Group: "dag-1"})
		admins := subscribe(admin, manager.WebhookRequest{URL: rcv.URL + "/admin"})
		other := subscribe(alice, manager.WebhookRequest{URL: rcv.URL + "/other", Group: "dag-2"})
		failed := subscribe(alice, manager.WebhookRequest{URL: rcv.URL + "/failed", Statuses: []fsm.Status{fsm.Failed}})
		bobs := subscribe(bob, manager.WebhookRequest{URL: rcv.URL + "/bob"})
		want := map[string]bool{all: true, dag: true, admins: true, container.EventBusTarget: true, other: false, failed: false, bobs: false}

		clock := storetest.NewClock()
		member := func(owner, group string) container.Instance {
			t.Helper()
			p := storetest.NewCreate(clock, owner)
			p.Instance.Group = group
			inst, err := s.CreateInstance(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return inst
		}
		run := func(inst container.Instance) {
			t.Helper()
			for _, to := range []fsm.Status{fsm.Creating, fsm.Running} {
				cur, err := s.GetInstance(ctx, inst.ID)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: cur.Version, From: cur.Status, To: to}); err != nil {
					t.Fatal(err)
				}
			}
		}
		groupDeliveries := func(id string) []container.OutboxItem {
			var out []container.OutboxItem
			for _, it := range deliveriesOf(t, s, id) {
				if it.Delivery.Group != nil {
					out = append(out, it)
				}
			}
			return out
		}

		cases := []struct {
			name string
			// last is the last member's status: pending is cancelled (its
			// own write carries the finish), running needs no write.
			last fsm.Status
		}{
			{"last member written", fsm.Pending},
			{"last member unchanged", fsm.Running},
		}
		for _, tc := range cases {
			first, last := member("alice", "dag-1"), member("alice", "dag-1")
			run(first)
			if tc.last == fsm.Running {
				run(last)
			}
			before, err := s.GetInstance(ctx, last.ID)
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.FinishGroup(ctx, alice, "", "dag-1", manager.OutcomeSucceeded, "req-finish")
			if err != nil {
				t.Fatalf("%s: FinishGroup: %v", tc.name, err)
			}
			if ds := groupDeliveries(first.ID); len(ds) != 0 {
				t.Errorf("%s: the first member carried %d finish deliveries; want them on the last", tc.name, len(ds))
			}
			ds := groupDeliveries(last.ID)
			got := map[string]bool{}
			for _, it := range ds {
				got[it.Delivery.WebhookID] = true
				if g := it.Delivery.Group; !reflect.DeepEqual(*g, res) {
					t.Errorf("%s: delivery's group = %+v; want the finish's answer %+v", tc.name, *g, res)
				}
			}
			for id, ok := range want {
				if got[id] != ok {
					t.Errorf("%s: delivery to %s: %v; want %v", tc.name, id, got[id], ok)
				}
			}
			after, err := s.GetInstance(ctx, last.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.Version != before.Version+1 || after.Status != map[fsm.Status]fsm.Status{fsm.Pending: fsm.Failed, fsm.Running: fsm.Running}[tc.last] {
				t.Errorf("%s: last member %s@%d → %s@%d; want one write", tc.name, before.Status, before.Version, after.Status, after.Version)
			}
			before2 := len(rcv.Received())
			for _, it := range ds {
				if res := w.Process(ctx, deliveryOf(t, it)); !res.Ack || res.Reason != "done" {
					t.Fatalf("%s: Process(%s) = %+v; want done", tc.name, it.Delivery.WebhookID, res)
				}
			}
			recv := rcv.Received()[before2:]
			if len(recv) != len(ds)-1 {
				t.Fatalf("%s: receiver got %d requests; want %d", tc.name, len(recv), len(ds)-1)
			}
			for _, r := range recv {
				if r.Type != webhook.EventGroupFinished || r.Group == nil || !reflect.DeepEqual(r.Group.Group, res) || !got[r.Group.WebhookID] {
					t.Errorf("%s: receiver got %s; want group.finished with %+v", tc.name, r.Body, res)
				}
			}
			// Clear the group for the next case.
			for _, id := range []string{first.ID, last.ID} {
				cur, err := s.GetInstance(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.DeleteInstance(ctx, store.DeleteParams{ID: id, ExpectVersion: cur.Version,
					Event: container.Event{Type: container.EventDeleted, From: cur.Status}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, entries := bus.got()
		if len(entries) != len(cases) {
			t.Fatalf("bus got %d entries; want %d", len(entries), len(cases))
		}
		for _, e := range entries {
			var detail eventbus.GroupDetail
			if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
				t.Fatal(err)
			}
			if e.DetailType != eventbus.DetailTypeGroupFinished || detail.Group.Group != "dag-1" || detail.Group.Outcome != manager.OutcomeSucceeded ||
				detail.DeliveryID == "" {
				t.Errorf("bus entry %+v, detail %+v; want a Group Finished of dag-1", e, detail)
			}
		}

		// Bob's finish reaches bob's and the admin's subscriptions (and
		// the bus) only; a reset is not a finish.
		bobsMember := member("bob", "dag-1")
		if _, err := m.FinishGroup(ctx, bob, "", "dag-1", manager.OutcomeFailed, "req-bob"); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, it := range groupDeliveries(bobsMember.ID) {
			got[it.Delivery.WebhookID] = true
		}
		if wantBob := map[string]bool{bobs: true, admins: true, container.EventBusTarget: true}; !reflect.DeepEqual(got, wantBob) {
			t.Errorf("bob's finish delivered to %v; want %v", got, wantBob)
		}
		reset := member("alice", "dag-3")
		if _, err := m.ResetGroup(ctx, alice, "", "dag-3", "req-reset"); err != nil {
			t.Fatal(err)
		}
		if ds := groupDeliveries(reset.ID); len(ds) != 0 {
			t.Errorf("a reset wrote %d group deliveries", len(ds))
		}
	})
}
