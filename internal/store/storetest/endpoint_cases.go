package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// testEndpoints: an instance's endpoints come back as written from a get
// and a listing, and a transition that clears them leaves none.
func testEndpoints(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	inst := mustCreate(t, s, NewCreate(c, "alice"))
	inst = move(t, s, c, inst, fsm.Creating)
	eps := []container.Endpoint{
		{Port: 80, Protocol: "tcp", Host: "203.0.113.7", HostPort: 32768, Via: container.EndpointViaHost},
		{Port: 53, Protocol: "udp", Host: "2001:db8::1", HostPort: 32769, Via: container.EndpointViaHost},
	}
	inst, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: fsm.Running,
		Update: func(i *container.Instance) { i.Endpoints = eps }})
	if err != nil {
		t.Fatalf("Transition with endpoints: %v", err)
	}
	if got := mustGet(t, s, inst.ID).Endpoints; !reflect.DeepEqual(got, eps) {
		t.Fatalf("endpoints read back: %+v, want %+v", got, eps)
	}
	listed := allInstances(t, s, store.ListQuery{Owner: "alice"})
	if len(listed) != 1 || !reflect.DeepEqual(listed[0].Endpoints, eps) {
		t.Fatalf("endpoints listed: %+v", listed)
	}
	if _, err := s.Transition(ctx, store.TransitionParams{ID: inst.ID, ExpectVersion: inst.Version, From: inst.Status, To: fsm.Stopped,
		Update: func(i *container.Instance) { i.Endpoints = nil }}); err != nil {
		t.Fatalf("Transition clearing endpoints: %v", err)
	}
	if got := mustGet(t, s, inst.ID).Endpoints; len(got) != 0 {
		t.Fatalf("endpoints after clearing: %+v", got)
	}
}
