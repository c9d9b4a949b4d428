package hostpolicy

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
)

// step is one template write against the ledger: a template's binds, and
// whether the write must be refused (and if so, what the message must
// say, and never say).
type step struct {
	tpl     string
	binds   []Bind
	refused bool
	say     string
}

func bind(src string, ro, shared bool) Bind {
	return Bind{Field: "volumes[0].source", Source: src, ReadOnly: ro, Shared: shared}
}

// TestLedgerSequences: the reproductions, as sequences of
// template writes over time (a delete keeps the ledger: it is simply no
// step), and the owner rules.
func TestLedgerSequences(t *testing.T) {
	const ws = "/r/ws"
	cases := []struct {
		name  string
		steps []step
	}{
		{"repro 1: made read_only as advised, then the inner template", []step{
			{tpl: "homew", binds: []Bind{bind("/r/h/$USERID", false, false)}},
			{tpl: "datat", binds: []Bind{bind("/r/h/$USERID/data", false, false)}, refused: true, say: "retire"},
			{tpl: "homew", binds: []Bind{bind("/r/h/$USERID", true, false)}},
			{tpl: "datat", binds: []Bind{bind("/r/h/$USERID/data", false, false)}, refused: true, say: "DELETE /api/bind-ledger/"},
		}},
		{"repro 2: the writable template deleted (its entry stays)", []step{
			{tpl: "carol", binds: []Bind{bind("/r/c/$USERID", false, false)}},
			{tpl: "inner", binds: []Bind{bind("/r/c/$USERID/x", true, false)}, refused: true, say: "retire"},
		}},
		{"repro 2 in the other order: the inner one first, then a writable ancestor", []step{
			{tpl: "inner", binds: []Bind{bind("/r/c/$USERID/x", true, false)}},
			{tpl: "outer", binds: []Bind{bind("/r/c/$USERID", false, false)}, refused: true, say: "read_only"},
			{tpl: "outer", binds: []Bind{bind("/r/c/$USERID", true, false)}},
		}},
		{"repro 3: alternating writable/read_only never lets the inner one in", []step{
			{tpl: "tr", binds: []Bind{bind("/r/tr/$USERID", true, false)}},
			{tpl: "tr", binds: []Bind{bind("/r/tr/$USERID", false, false)}},
			{tpl: "tr", binds: []Bind{bind("/r/tr/$USERID", true, false)}},
			{tpl: "sub", binds: []Bind{bind("/r/tr/$USERID/sub", true, false)}, refused: true, say: "retire"},
		}},
		{"repro 4: a bind by container name crosses owners", []step{
			{tpl: "byname", binds: []Bind{bind("/r/n/$CONTAINER_NAME", false, false)}, refused: true, say: "names no owner"},
			{tpl: "byname", binds: []Bind{bind("/r/n/$CONTAINER_NAME", false, true)}},
			{tpl: "mine", binds: []Bind{bind("/r/n/$USERID", false, false)}, refused: true, say: "owner"},
		}},
		{"a shared path where a user id could name it", []step{
			{tpl: "home", binds: []Bind{bind("/r/$USERID", true, false)}},
			{tpl: "tools", binds: []Bind{bind("/r/shared", true, true)}, refused: true, say: "owner"},
			{tpl: "tools2", binds: []Bind{bind("/srv/tools", true, true)}},
		}},
		{"owner at different places", []step{
			{tpl: "a", binds: []Bind{bind("/r/x/$USERID", true, false)}},
			{tpl: "b", binds: []Bind{bind("/r/$USERID/y", true, false)}, refused: true, say: "different path elements"},
		}},
		{"$WORKSPACE_PATH is the owner segment under the root", []step{
			{tpl: "ws", binds: []Bind{bind("$WORKSPACE_PATH", false, false)}},
			{tpl: "ws2", binds: []Bind{bind(ws+"/$USERID", false, false)}},
			{tpl: "cache", binds: []Bind{bind("$WORKSPACE_PATH/cache", true, false)}, refused: true, say: "retire"},
		}},
		{"within one template", []step{
			{tpl: "both", binds: []Bind{bind("/r/b/$USERID", false, false), {Field: "volumes[1].source", Source: "/r/b/$USERID/in", ReadOnly: true}}, refused: true, say: "read_only"},
		}},
		{"siblings and equal patterns are fine", []step{
			{tpl: "a", binds: []Bind{bind("/r/a/$USERID", false, false)}},
			{tpl: "b", binds: []Bind{bind("/r/b/$USERID", false, false)}},
			{tpl: "a2", binds: []Bind{bind("/r/a/$USERID", false, false)}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l container.BindLedger
			for i, s := range c.steps {
				ps := Check(l, s.tpl, s.binds, ws)
				if got := len(ps) > 0; got != s.refused {
					t.Fatalf("step %d (%s): refused = %v (%v), want %v", i, s.tpl, got, ps, s.refused)
				}
				if s.refused {
					all := ""
					for _, p := range ps {
						all += p.Message + "\n"
					}
					if !strings.Contains(all, s.say) {
						t.Errorf("step %d (%s): messages do not say %q:\n%s", i, s.tpl, s.say, all)
					}
					continue
				}
				l = Record(l, s.tpl, s.binds, ws)
				l.Version++
			}
		})
	}
}

// TestLedgerNeverAdvisesReadOnlyForAnOldWriter: once a pattern was
// writable, nothing below it is ever accepted, and no message names
// read_only as the way out.
func TestLedgerNeverAdvisesReadOnlyForAnOldWriter(t *testing.T) {
	l := Record(container.BindLedger{}, "homew", []Bind{bind("/r/h/$USERID", false, false)}, "/ws")
	l = Record(l, "homew", []Bind{bind("/r/h/$USERID", true, false)}, "/ws")
	for _, src := range []string{"/r/h/$USERID/data", "/r/h/$USERID/$CONTAINER_NAME", "/r/h/$USERID/a/b"} {
		for _, ro := range []bool{true, false} {
			ps := Check(l, "datat", []Bind{bind(src, ro, false)}, "/ws")
			if len(ps) == 0 {
				t.Fatalf("%q (read_only %v) accepted below a once-writable pattern", src, ro)
			}
			for _, p := range ps {
				if strings.Contains(p.Message, "read_only") {
					t.Errorf("%q: advises read_only: %s", src, p.Message)
				}
			}
		}
	}
}

func TestCoversAndMatches(t *testing.T) {
	binds := []Bind{bind("$WORKSPACE_PATH/a", false, false)}
	l := Record(container.BindLedger{}, "t", binds, "/ws")
	if !Covers(l, "t", binds, "/ws") || Covers(l, "u", binds, "/ws") {
		t.Errorf("Covers: wrong")
	}
	if len(l.Entries) != 1 || l.Entries[0].Pattern != "/ws/$USERID/a" || l.Entries[0].ID != EntryID("/ws/$USERID/a") {
		t.Fatalf("entries = %+v", l.Entries)
	}
	p, err := Parse(l.Entries[0].Pattern, "")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"/ws/bob/a": true, "/ws/bob/a/": true, "/ws/bob/b": false, "/ws/a": false, "/ws/bob/a/c": false} {
		if got := p.Matches(path); got != want {
			t.Errorf("Matches(%q) = %v, want %v", path, got, want)
		}
	}
}
