package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
)

func (e *serveEnv) named(tpl, name, group string) container.Instance {
	e.t.Helper()
	return e.instance(e.must(e.call("POST", "/api/containers", aliceToken,
		map[string]string{"template": tpl, "name": name, "group": group}), http.StatusAccepted))
}

// eventAt is when the instance's first event of type typ happened.
func eventAt(t *testing.T, evs []container.Event, typ string) time.Time {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == typ {
			return ev.At
		}
	}
	t.Fatalf("no %s event in %+v", typ, evs)
	return time.Time{}
}

// TestServeStaleMembers: cleanup_dag_node_containers_before_start through
// berth serve. A group run leaves a failed node's container (its
// dag_node_cleanup_on_failed is none); when the group is run again, the
// node's new member starts only after the stale one (same group, same
// name) and its container are deleted, and the other node's member is left
// alone. With the key false the stale member stays.
func TestServeStaleMembers(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		key := map[bool]string{true: "true", false: "false"}[on]
		t.Run("cleanup_dag_node_containers_before_start="+key, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, serveOptions{containerKeys: "cleanup_dag_node_containers_before_start: " + key +
				"\ndag_node_cleanup_on_failed: none\ndelete_container_on_node_success: false"})
			e.start()
			e.putTemplates()
			old := e.named("bad", "step-a", "nightly")
			e.waitFor(old.ID, fsm.Failed, time.Minute)
			other := e.named("sleeper", "step-b", "nightly")
			e.waitFor(other.ID, fsm.Running, time.Minute)
			if e.noContainerOf(old.ID) {
				t.Fatal("the failed node's container is gone before the rerun: nothing would be stale")
			}

			again := e.named("sleeper", "step-a", "nightly")
			e.waitFor(again.ID, fsm.Running, 2*time.Minute)
			if !on {
				e.waitFor(old.ID, fsm.Failed, time.Second)
				if e.noContainerOf(old.ID) {
					t.Fatal("the key is false, yet the stale member's container was removed")
				}
				e.stop()
				return
			}
			e.until("the stale member deleted", time.Minute, func() bool { return e.deleted(old.ID) })
			if !e.noContainerOf(old.ID) {
				t.Fatal("the stale member's container is still there")
			}
			oldEvs := e.events(old.ID)
			if countType(oldEvs, container.EventDeleteRequested) != 1 ||
				!strings.HasPrefix(oldEvs[countBefore(oldEvs, container.EventDeleteRequested)].Message, manager.StaleReason) {
				t.Fatalf("stale member's events: %+v", oldEvs)
			}
			deleted := eventAt(t, oldEvs, container.EventDeleted)
			if creating := eventAt(t, e.events(again.ID), container.EventCreating); creating.Before(deleted) {
				t.Fatalf("the new member was being created at %v, before its stale member was deleted at %v", creating, deleted)
			}
			e.waitFor(other.ID, fsm.Running, time.Second)
			e.stop()
		})
	}
}
