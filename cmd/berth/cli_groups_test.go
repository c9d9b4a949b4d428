package main

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
)

// TestCLIGroups: berth groups list|get|finish|reset, tables and -o json,
// against the real API (no workers: every member stays queued).
func TestCLIGroups(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{Groups: manager.GroupPolicies{OnFinished: config.CleanupDelete, ResetAllowed: true}})
	env := cliEnv(srv, clienttest.AliceToken)
	var ids []string
	for _, g := range []string{"g1", "g1", "g2"} {
		r := runBerth(t, env, "", "containers", "create", "--template", "busybox", "--group", g, "-o", "json")
		r.check(t, 0, nil, nil)
		ids = append(ids, decodeOut[client.Instance](t, r).ID)
	}

	rows := tableRows(runBerth(t, env, "", "groups", "list").stdout)
	if len(rows) != 3 || strings.Join(rows[0], " ") != "GROUP OWNER TOTAL STATUSES" ||
		strings.Join(rows[1], " ") != "g1 alice 2 pending=2" || strings.Join(rows[2], " ") != "g2 alice 1 pending=1" {
		t.Fatalf("groups list: %q", rows)
	}
	page := decodeOut[client.Page[client.GroupSummary]](t, runBerth(t, env, "", "groups", "list", "--limit", "1", "-o", "json"))
	if len(page.Items) != 1 || page.Items[0].Group != "g1" || page.NextCursor == "" {
		t.Fatalf("first page: %+v", page)
	}
	page = decodeOut[client.Page[client.GroupSummary]](t, runBerth(t, env, "", "groups", "list", "--limit", "1", "--cursor", page.NextCursor, "-o", "json"))
	if len(page.Items) != 1 || page.Items[0].Group != "g2" || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}
	runBerth(t, env, "", "groups", "get", "g1").check(t, 0, []string{"Group g1 of alice: 2 member(s): pending=2", ids[0], ids[1]}, nil)
	g := decodeOut[client.Group](t, runBerth(t, env, "", "g", "get", "g1", "-o", "json"))
	if g.Total != 2 || len(g.Members) != 2 || g.Members[0].ID != ids[0] {
		t.Fatalf("group json: %+v", g)
	}
	bob := cliEnv(srv, clienttest.BobToken)
	runBerth(t, bob, "", "groups", "get", "g1").check(t, 1, nil, []string{"Not Found (404)"})
	runBerth(t, bob, "", "groups", "get", "g1", "--owner", "alice").check(t, 1, nil, []string{"Bad Request (400)"})
	runBerth(t, cliEnv(srv, clienttest.AdminToken), "", "groups", "get", "g1", "--owner", "alice").check(t, 0, []string{ids[0]}, nil)

	runBerth(t, env, "", "groups", "finish", "g1").check(t, 2, nil, []string{"--outcome is required"})
	runBerth(t, env, "", "groups", "finish", "g1", "--outcome", "maybe").check(t, 1, nil, []string{"Unprocessable Content (422)"})
	runBerth(t, env, "", "groups", "finish", "g1", "--outcome", "succeeded").check(t, 0,
		[]string{"Group g1 of alice: policy delete applied to 2 member(s)", "ID", "ACTION", ids[0], container.ActionDeleteRequested}, nil)
	res := decodeOut[client.GroupResult](t, runBerth(t, env, "", "groups", "reset", "g2", "-o", "json"))
	if res.Policy != "delete" || len(res.Members) != 1 || res.Members[0].Action != container.ActionDeleteRequested {
		t.Fatalf("reset: %+v", res)
	}

	off := clienttest.New(t, clienttest.Options{})
	runBerth(t, cliEnv(off, clienttest.AliceToken), "", "groups", "reset", "g1").check(t, 1, nil,
		[]string{"Conflict (409)", "cleanup_dag_node_containers_before_start is false"})
}
