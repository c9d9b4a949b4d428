package hostpolicy

import "testing"

func TestBindPatternNesting(t *testing.T) {
	const ws = "/srv/berth/workspaces"
	cases := []struct {
		name      string
		outer     string
		outerRO   bool
		inner     string
		dangerous bool
	}{
		{"the issue's attack: a user's home above a per-container dir", "/srv/berth/$USERID", false, "/srv/berth/$USERID/$CONTAINER_NAME", true},
		{"read-only ancestor is harmless", "/srv/berth/$USERID", true, "/srv/berth/$USERID/$CONTAINER_NAME", false},
		{"a variable matches a literal segment", "/srv/berth/$USERID", false, "/srv/berth/shared/tools", true},
		{"a literal matches a variable segment", "/srv/berth/shared", false, "/srv/berth/$USERID/data", true},
		{"different literal segments never meet", "/srv/berth/homes/$USERID", false, "/srv/berth/data/$USERID/x", false},
		{"literal ends that cannot meet", "/srv/berth/home-$USERID", false, "/srv/berth/data-$USERID/x", false},
		{"literal ends that may meet", "/srv/berth/u$USERID", false, "/srv/berth/us$CONTAINER_NAME/x", true},
		{"a literal the variable segment cannot match", "/srv/berth/home-$USERID", false, "/srv/berth/data/x", false},
		{"the same directory is not below itself", "/srv/berth/$USERID", false, "/srv/berth/$USERID", false},
		{"a root mounted writable", "/srv/berth", false, "/srv/berth/$USERID", true},
		{"the workspace root above $WORKSPACE_PATH", ws, false, "$WORKSPACE_PATH", true},
		{"$WORKSPACE_PATH above one of its subdirectories", "$WORKSPACE_PATH", false, "$WORKSPACE_PATH/cache", true},
		{"$WORKSPACE_PATH above another user's path", "$WORKSPACE_PATH", false, ws + "/alice/cache", true},
		{"$WORKSPACE_PATH beside a sibling tree", "$WORKSPACE_PATH", false, "/srv/berth/data/$USERID", false},
		{"deeper is never above shallower", "/srv/berth/$USERID/$CONTAINER_NAME", false, "/srv/berth/$USERID", false},
		{"a trailing slash is the same directory", "/srv/berth/$USERID/", false, "/srv/berth/$USERID/x/", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.outer, ws)
			if err != nil {
				t.Fatalf("parse %q: %v", c.outer, err)
			}
			q, err := Parse(c.inner, ws)
			if err != nil {
				t.Fatalf("parse %q: %v", c.inner, err)
			}
			if got := !c.outerRO && p.MayContain(q); got != c.dangerous {
				t.Errorf("%q exposes %q = %v, want %v", c.outer, c.inner, got, c.dangerous)
			}
		})
	}
}

func TestBindPatternParse(t *testing.T) {
	bad := []string{
		"relative/$USERID", "/srv//x", "/srv/./x", "/srv/../x", "/srv/x:y", "/srv/x,y", "/srv/a\x00b",
		"/srv/x$WORKSPACE_PATH", "/srv/$WORKSPACE_PATH", "$WORKSPACE_PATH/../x", "/srv/$NOPE", "/", "",
	}
	for _, s := range bad {
		if _, err := Parse(s, "/srv/ws"); err == nil {
			t.Errorf("parseBindPattern(%q) accepted", s)
		}
	}
	for _, s := range []string{"/srv/x", "/srv/$USERID/${CONTAINER_NAME}", "$WORKSPACE_PATH", "${WORKSPACE_PATH}/a", "/srv/$$lit"} {
		if _, err := Parse(s, "/srv/ws"); err != nil {
			t.Errorf("parseBindPattern(%q): %v", s, err)
		}
	}
}

func TestBindPatternCheck(t *testing.T) {
	p, err := Parse("/srv/berth/$USERID/g-$GROUP", "/ws")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		resolved string
		ok       bool
	}{
		{"/srv/berth/alice/g-dev", true},
		{"/srv/berth/alice/g-", false},      // empty group
		{"/srv/berth/a/b/g-dev", false},     // a '/' in the user id
		{"/srv/berth/../g-dev", false},      // a user id of ".."
		{"/srv/berth/./g-dev", false},       // a user id of "."
		{"/srv/berth//g-dev", false},        // an empty user id
		{"/srv/berth/alice/g-dev/x", false}, // a '/' in the group
		{"/srv/berth/alice/h-dev", false},   // not what the literal says
		{"/srv/berth/a\x00b/g-dev", false},  // NUL in the user id
		{"/srv/berth/a:b/g-dev", false},     // Docker's bind separator
		{"/srv/berth/alice/g-d,v", false},   // and its option separator
	}
	for _, c := range cases {
		if err := p.Check(c.resolved); (err == nil) != c.ok {
			t.Errorf("check(%q) = %v, want ok=%v", c.resolved, err, c.ok)
		}
	}
}
