package main

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
)

// TestCLIUsageCommand: berth usage prints the caller's usage as a table or the
// API's JSON, grouped as asked; a bad time is a usage error, a time the
// API refuses or another's usage for a user is the API's problem.
func TestCLIUsageCommand(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	admin := cliEnv(srv, clienttest.AdminToken)
	alice := cliEnv(srv, clienttest.AliceToken)

	runBerth(t, alice, "", "containers", "create", "--template", "busybox").check(t, 0, nil, nil)
	u := decodeOut[client.Usage](t, runBerth(t, alice, "", "usage", "--group-by", "owner", "-o", "json"))
	if u.GroupBy != "owner" || len(u.Items) != 1 || u.Items[0].Key != "alice" || u.Items[0].Creates != 1 {
		t.Errorf("usage = %+v", u)
	}
	runBerth(t, alice, "", "usage", "--group-by", "template").check(t, 0, []string{"TEMPLATE", "CONTAINER-HOURS", "busybox"}, nil)
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.DateOnly)
	runBerth(t, admin, "", "usage", "--owner", "alice", "--from", day).check(t, 0, []string{"DAY"}, nil)
	runBerth(t, alice, "", "usage", "--from", "yesterday").check(t, 2, nil, []string{"--from"})
	runBerth(t, alice, "", "usage", "--from", "2026-12-01T00:30:00Z").check(t, 1, nil, []string{"400", "whole UTC hour"})
	runBerth(t, alice, "", "usage", "--owner", "bob").check(t, 1, nil, []string{"403"})
	runBerth(t, alice, "", "help", "usage").check(t, 0, []string{"berth usage [--from T]", "--group-by"}, nil)
}
