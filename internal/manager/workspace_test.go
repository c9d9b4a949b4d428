package manager

import "testing"

func TestWorkspacePath(t *testing.T) {
	m := New(Options{WorkspaceRoot: "/ws"})
	cases := map[string]string{
		"alice":       "/ws/alice",
		"a.b_c-D9":    "/ws/a.b_c-D9",
		"alice@x.com": "/ws/alice%40x.com",
		"alice_x.com": "/ws/alice_x.com",
		"a/b":         "/ws/a%2Fb",
		"..":          "/ws/%2E%2E",
		".":           "/ws/%2E",
		"a%40x.com":   "/ws/a%2540x.com",
		"a:b,c":       "/ws/a%3Ab%2Cc",
		"é":           "/ws/%C3%A9",
	}
	seen := map[string]string{}
	for user, want := range cases {
		got := m.workspacePath(user)
		if got != want {
			t.Errorf("workspacePath(%q) = %q, want %q", user, got, want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q share %q", user, other, got)
		}
		seen[got] = user
	}
}
