package main

import (
	"testing"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
)

// TestCLIQuotas: an admin puts, gets, lists and deletes overrides; a user
// reads their own standing and is refused the admin commands; a wrong
// kind is a usage error.
func TestCLIQuotas(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	admin := cliEnv(srv, clienttest.AdminToken)
	alice := cliEnv(srv, clienttest.AliceToken)

	runBerth(t, admin, "", "quotas", "put", "user", "alice", "--instances", "5", "--cpus", "1.5", "--memory", "2Gi").
		check(t, 0, []string{"user alice", "5", "1.5", "2Gi"}, nil)
	runBerth(t, admin, "", "quotas", "put", "team", "data", "--running", "4").check(t, 0, []string{"team data", "4"}, nil)
	got := decodeOut[client.QuotaOverride](t, runBerth(t, admin, "", "quotas", "get", "user", "alice", "-o", "json"))
	if got.Instances != 5 || got.CPUs.String() != "1.5" || got.Memory != "2Gi" {
		t.Errorf("get = %+v", got)
	}
	l := decodeOut[client.QuotaList](t, runBerth(t, admin, "", "quotas", "list", "-o", "json"))
	if len(l.Items) != 2 || l.Items[0].Name != "data" || l.Items[1].Name != "alice" {
		t.Errorf("list = %+v", l)
	}
	runBerth(t, alice, "", "quotas", "create", "x").check(t, 2, nil, nil)
	runBerth(t, alice, "", "containers", "create", "--template", "busybox").check(t, 0, nil, nil)
	me := decodeOut[client.MyQuotas](t, runBerth(t, alice, "", "quotas", "me", "-o", "json"))
	if me.User.Name != "alice" || !me.User.Override || me.User.Limits.Instances != 5 || me.User.Used.Instances != 1 || me.Team != nil {
		t.Errorf("me = %+v", me)
	}
	runBerth(t, alice, "", "quotas", "me").check(t, 0, []string{"user alice limits", "user alice used"}, nil)
	runBerth(t, alice, "", "quotas", "list").check(t, 1, nil, []string{"403"})
	runBerth(t, alice, "", "quotas", "put", "user", "alice", "--instances", "99").check(t, 1, nil, []string{"403"})
	runBerth(t, admin, "", "quotas", "get", "group", "x").check(t, 2, nil, []string{"user or team"})
	runBerth(t, admin, "", "quotas", "put", "user", "bob", "--cpus", "lots").check(t, 2, nil, []string{"--cpus"})
	runBerth(t, admin, "", "quotas", "delete", "user", "alice").check(t, 0, []string{"override deleted"}, nil)
	runBerth(t, admin, "", "quotas", "get", "user", "alice").check(t, 1, nil, []string{"404"})
}
