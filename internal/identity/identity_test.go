package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/identity"
)

// TestFor: only a caller that may act for others does, for a well-formed
// user and team; the caller it returns is the user's, naming the service.
func TestFor(t *testing.T) {
	svc := identity.Caller{User: "engine", Team: "ops", MayActFor: true}
	cases := []struct {
		name       string
		c          identity.Caller
		user, team string
		want       identity.Caller
		err        string
	}{
		{name: "service for alice", c: svc, user: "alice", team: "data",
			want: identity.Caller{User: "alice", Team: "data", Service: "engine"}},
		{name: "no team", c: svc, user: "alice", want: identity.Caller{User: "alice", Service: "engine"}},
		{name: "itself", c: svc, user: "engine", team: "ops", want: svc},
		{name: "admin cannot", c: identity.Caller{User: "root", Admin: true}, user: "alice", err: "claim"},
		{name: "user cannot", c: identity.Caller{User: "bob"}, user: "alice", err: "claim"},
		{name: "no user", c: svc, team: "data", err: "on_behalf_of is required"},
		{name: "space", c: svc, user: "a b", err: "on_behalf_of must be printable"},
		{name: "control", c: svc, user: "a\x00", err: "on_behalf_of must be printable"},
		{name: "long", c: svc, user: strings.Repeat("a", identity.MaxUserLen+1), err: "at most 255"},
		{name: "bad team", c: svc, user: "alice", team: "d\tx", err: "on_behalf_of_team must be printable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.For(tc.user, tc.team)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("For(%q, %q) = %+v, %v; want an error with %q", tc.user, tc.team, got, err, tc.err)
				}
				if strings.Contains(tc.err, "claim") && !errors.Is(err, identity.ErrCannotActFor) {
					t.Errorf("err %v is not ErrCannotActFor", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("For(%q, %q) = %+v, %v; want %+v", tc.user, tc.team, got, err, tc.want)
			}
			if tc.want.Service != "" && (got.Actor() != "engine" || got.ActingFor() != tc.user || got.MayActFor || got.Admin) {
				t.Errorf("actor %q acting for %q (may act %v, admin %v)", got.Actor(), got.ActingFor(), got.MayActFor, got.Admin)
			}
		})
	}
}
