package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
)

func (e *serveEnv) member(tpl, group string) container.Instance {
	e.t.Helper()
	return e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": tpl, "group": group}), http.StatusAccepted))
}

func (e *serveEnv) events(id string) []container.Event {
	e.t.Helper()
	var evs struct{ Items []container.Event }
	if err := json.Unmarshal(e.must(e.call("GET", "/api/containers/"+id+"/events?limit=100", aliceToken, nil), 200).body, &evs); err != nil {
		e.t.Fatal(err)
	}
	return evs.Items
}

func countType(evs []container.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// until polls cond (each poll is an API or engine read) until it holds.
func (e *serveEnv) until(what string, within time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within %s\nserver log:\n%s", what, within, tail(e.logs.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *serveEnv) deleted(id string) bool {
	return e.call("GET", "/api/containers/"+id, aliceToken, nil).status == http.StatusNotFound
}

func (e *serveEnv) noContainerOf(id string) bool {
	for _, st := range e.containers() {
		if st.InstanceID == id {
			return false
		}
	}
	return true
}

func (e *serveEnv) groupResult(r apiResp) container.GroupResult {
	e.t.Helper()
	var res container.GroupResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		e.t.Fatalf("decoding group result: %v: %s", err, r.body)
	}
	return res
}

// TestServeGroups: the DAG keys at their defaults (delete on success, stop
// on failure, delete on finish, reset allowed) through the HTTP API of a
// real `berth serve` on a real Docker engine.
func TestServeGroups(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{maxConcurrency: 1})
	e.start()
	e.putTemplates()

	// delete_container_on_node_success: true → a member that exits 0 is deleted.
	ok, okLoner := e.member("ok", "run-1"), e.member("ok", "")
	e.until("successful member deleted", time.Minute, func() bool { return e.deleted(ok.ID) })
	e.until("its container removed", time.Minute, func() bool { return e.noContainerOf(ok.ID) })
	evs := e.events(ok.ID)
	if countType(evs, container.EventExited) != 1 || countType(evs, container.EventDeleted) != 1 {
		t.Fatalf("events of the deleted member: %+v", evs)
	}
	if s := e.waitFor(okLoner.ID, fsm.Stopped, time.Minute); s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("a container without a group is kept: %+v", s)
	}

	// dag_node_cleanup_on_failed: stop → the failed member stays, its
	// container stopped, and the history says so.
	bad := e.member("bad", "run-1")
	// (Not necessarily the last event: the runtime's own report of the
	// start may come late and be recorded as rejected.)
	e.until("failed member's cleanup", time.Minute, func() bool {
		for _, ev := range e.events(bad.ID) {
			if ev.Type == container.EventStopped && ev.From == fsm.Failed && ev.To == fsm.Failed {
				return true
			}
		}
		return false
	})
	f := e.instance(e.must(e.call("GET", "/api/containers/"+bad.ID, aliceToken, nil), 200))
	if f.Status != fsm.Failed || !strings.Contains(f.StatusReason, "dag_node_cleanup_on_failed=stop") {
		t.Fatalf("failed member: %+v", f)
	}

	// The group view, owner-scoped.
	var g container.Group
	if err := json.Unmarshal(e.must(e.call("GET", "/api/groups/run-1", aliceToken, nil), 200).body, &g); err != nil {
		t.Fatal(err)
	}
	if g.Total != 1 || g.Counts[fsm.Failed] != 1 || len(g.Members) != 1 || g.Members[0].ID != bad.ID {
		t.Fatalf("group run-1: %+v", g)
	}
	e.must(e.call("GET", "/api/groups/run-1", bobToken, nil), http.StatusNotFound)
	e.must(e.call("GET", "/api/groups/run-1", adminToken, nil), http.StatusNotFound)
	e.must(e.call("GET", "/api/groups/run-1?owner=alice", adminToken, nil), http.StatusOK)
	e.must(e.call("GET", "/api/groups/run-1?owner=alice", bobToken, nil), http.StatusBadRequest)
	var list struct{ Items []container.GroupSummary }
	if err := json.Unmarshal(e.must(e.call("GET", "/api/groups", bobToken, nil), 200).body, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("bob's groups: %+v %v", list, err)
	}
	if res := e.groupResult(e.must(e.call("POST", "/api/groups/run-1/finish", bobToken, map[string]string{"outcome": "succeeded"}), http.StatusAccepted)); len(res.Members) != 0 {
		t.Fatalf("bob finished alice's group: %+v", res)
	}
	e.must(e.call("POST", "/api/groups/run-1/finish", aliceToken, map[string]string{"outcome": "done"}), http.StatusUnprocessableEntity)

	// finish with dag_node_cleanup_on_dag_finished: delete, queued members
	// included: one create at a time, so most of the burst is still queued.
	testFinishOrReset(t, e, "run-2", func() apiResp {
		return e.call("POST", "/api/groups/run-2/finish", aliceToken, map[string]string{"outcome": "cancelled"})
	})
	// reset (cleanup_dag_node_containers_before_start: true), the same way.
	testFinishOrReset(t, e, "run-3", func() apiResp { return e.call("POST", "/api/groups/run-3/reset", aliceToken, nil) })

	if err := json.Unmarshal(e.must(e.call("GET", "/api/groups", aliceToken, nil), 200).body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Group != "run-1" {
		t.Fatalf("alice's groups: %+v", list.Items)
	}
	e.stop()
}

func testFinishOrReset(t *testing.T, e *serveEnv, group string, call func() apiResp) {
	t.Helper()
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.member("sleeper", group).ID)
	}
	res := e.groupResult(e.must(call(), http.StatusAccepted))
	queued := map[string]bool{}
	for _, m := range res.Members {
		if m.Action == container.ActionDeleteRequested {
			queued[m.ID] = true
		}
	}
	if len(res.Members) != 5 || len(queued) == 0 {
		t.Fatalf("%s: %+v", group, res)
	}
	for _, id := range ids {
		e.until(group+" member deleted", time.Minute, func() bool { return e.deleted(id) })
		e.until(group+" member's container removed", time.Minute, func() bool { return e.noContainerOf(id) })
		evs := e.events(id)
		if queued[id] && countType(evs, container.EventCreating) != 0 {
			t.Fatalf("a member queued at the %s was created later: %+v", group, evs)
		}
		if countType(evs, container.EventDeleteRequested) != 1 || evs[len(evs)-1].Type != container.EventDeleted {
			t.Fatalf("events of %s: %+v", id, evs)
		}
	}
	e.must(e.call("GET", "/api/groups/"+group, aliceToken, nil), http.StatusNotFound)
}

// TestServeGroupCleanupAfterCrash: berth is killed (-9) while a member
// runs; the member exits while berth is down; at the next start the exit is
// found and delete_container_on_node_success is applied exactly once.
func TestServeGroupCleanupAfterCrash(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{})
	e.start()
	e.putTemplates()
	e.must(e.call("PUT", "/api/templates/late", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "sleep 2; exit 0"}}), http.StatusCreated)
	in := e.waitFor(e.member("late", "dag").ID, fsm.Running, time.Minute)
	e.kill()
	ctx := context.Background()
	e.until("the member exits while berth is down", time.Minute, func() bool {
		st, err := e.engine.Inspect(ctx, runtime.RefOf(in))
		return err == nil && st.Phase == runtime.PhaseExited
	})
	e.start()
	e.until("member deleted after the restart", time.Minute, func() bool { return e.deleted(in.ID) })
	e.until("its container removed", time.Minute, func() bool { return e.noContainerOf(in.ID) })
	// A second restart finds nothing left to do.
	e.kill()
	e.start()
	evs := e.events(in.ID)
	for typ, want := range map[string]int{container.EventExited: 1, container.EventDeleteRequested: 1, container.EventDeleted: 1} {
		if got := countType(evs, typ); got != want {
			t.Fatalf("%d %s events, want %d: %+v", got, typ, want, evs)
		}
	}
	e.stop()
}

// TestServeRecoverRunningDAG: members queued when berth is killed are
// resumed at the next start when recover_running_dag_on_start is true, and
// failed (with dag_node_cleanup_on_failed) when it is false; a group reset
// is refused (409) when cleanup_dag_node_containers_before_start is false.
func TestServeRecoverRunningDAG(t *testing.T) {
	t.Parallel()
	for _, recover := range []bool{true, false} {
		name := "recover_running_dag_on_start=" + map[bool]string{true: "true", false: "false"}[recover]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			keys := name[len("recover_running_dag_on_start="):]
			// The kill comes right after the creates, so a ContainerCreate is
			// often in flight: the engine finishes it after berth is gone, and
			// the restarted berth's delete of the interrupted member may come
			// first and find nothing. That container is an orphan, and the
			// reconciler removes it after orphan_grace: short here so that the
			// wait for "its container removed" holds berth to that guarantee.
			e := newServeEnv(t, serveOptions{maxConcurrency: 1, orphanGrace: 5 * time.Second, reconcileEvery: 2 * time.Second,
				containerKeys: "recover_running_dag_on_start: " + keys +
					"\ndag_node_cleanup_on_failed: delete\ncleanup_dag_node_containers_before_start: false"})
			e.start()
			e.putTemplates()
			var ids []string
			for i := 0; i < 5; i++ {
				ids = append(ids, e.member("sleeper", "dag").ID)
			}
			loner := e.create("sleeper")
			e.kill()
			e.start()
			if recover {
				for _, id := range ids {
					e.waitFor(id, fsm.Running, 2*time.Minute)
				}
			} else {
				interrupted := 0
				for _, id := range ids {
					e.until("member settled", 2*time.Minute, func() bool {
						r := e.call("GET", "/api/containers/"+id, aliceToken, nil)
						return r.status == http.StatusNotFound || e.instance(r).Status == fsm.Running
					})
					if e.deleted(id) {
						interrupted++
						evs := e.events(id)
						if countType(evs, container.EventFailed) != 1 || !strings.Contains(evs[countBefore(evs, container.EventFailed)].Message, manager.InterruptedReason) {
							t.Fatalf("interrupted member's events: %+v", evs)
						}
						e.until("its container removed", time.Minute, func() bool { return e.noContainerOf(id) })
					}
				}
				if interrupted == 0 {
					t.Fatal("no member was queued at the kill: nothing was interrupted")
				}
			}
			e.waitFor(loner.ID, fsm.Running, 2*time.Minute)
			r := e.must(e.call("POST", "/api/groups/dag/reset", aliceToken, nil), http.StatusConflict)
			if !strings.Contains(string(r.body), "cleanup_dag_node_containers_before_start") {
				t.Fatalf("409 does not say why: %s", r.body)
			}
			e.stop()
		})
	}
}

func countBefore(evs []container.Event, typ string) int {
	for i, ev := range evs {
		if ev.Type == typ {
			return i
		}
	}
	return 0
}

// TestServeImageStatus: with refresh_image_status_on_start true, the image
// of every template is looked up on each host at start and shown on GET
// /api/templates/{name} (present, missing); with false nothing is looked up.
func TestServeImageStatus(t *testing.T) {
	t.Parallel()
	for _, refresh := range []bool{true, false} {
		t.Run(map[bool]string{true: "refresh_image_status_on_start=true", false: "refresh_image_status_on_start=false"}[refresh], func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, serveOptions{noImageRefresh: !refresh})
			e.start()
			e.putTemplates()
			e.must(e.call("PUT", "/api/templates/ghost", adminToken, container.Template{Runtime: "docker", Image: "berth-test/absent:1",
				PullPolicy: container.PullNever, Command: []string{"true"}}), http.StatusCreated)
			// The templates exist now: the next start checks them.
			e.stop()
			started := time.Now()
			e.start()
			get := func(name string) container.Template {
				var tpl container.Template
				if err := json.Unmarshal(e.must(e.call("GET", "/api/templates/"+name, aliceToken, nil), 200).body, &tpl); err != nil {
					t.Fatal(err)
				}
				return tpl
			}
			if !refresh {
				var health map[string]any
				if err := json.Unmarshal(e.must(e.call("GET", "/healthz", adminToken, nil), 200).body, &health); err != nil {
					t.Fatal(err)
				}
				if _, ok := health["images"]; ok {
					t.Fatalf("images were checked: %v", health["images"])
				}
				if st := get("sleeper").ImageStatus; len(st) != 0 {
					t.Fatalf("image status without a refresh: %+v", st)
				}
				e.stop()
				return
			}
			// Each template's status is its own write: wait for all of them.
			e.until("image status stored", time.Minute, func() bool {
				return len(get("ghost").ImageStatus) > 0 && len(get("sleeper").ImageStatus) > 0
			})
			for name, want := range map[string]string{"sleeper": container.ImagePresent, "ghost": container.ImageMissing} {
				st := get(name).ImageStatus
				if len(st) != 1 || st[0].Host != "local" || st[0].Status != want || st[0].CheckedAt.Before(started.Add(-time.Second)) {
					t.Fatalf("%s: image status %+v, want one %s on local", name, st, want)
				}
			}
			// A PUT makes the template's image unchecked again.
			tpl := get("sleeper")
			tpl.Description = "changed"
			tpl.ImageStatus = nil
			var put container.Template
			if err := json.Unmarshal(e.must(e.call("PUT", "/api/templates/sleeper", adminToken, tpl), 200).body, &put); err != nil || len(put.ImageStatus) != 0 {
				t.Fatalf("put: %+v %v", put, err)
			}
			e.stop()
		})
	}
}
