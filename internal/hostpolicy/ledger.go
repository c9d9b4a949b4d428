package hostpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// The bind ledger: why a rule over the templates stored now is not enough.
//
// A container that could write a directory may have left a symlink in it,
// and the link stays on the host when its template is made read-only or
// deleted, and while any instance created from an older version runs. So
// the rule is checked against every bind pattern any template ever stored
// (container.BindLedger), with "writable" sticky:
//
//   - no pattern may lie strictly below a pattern that is, or ever was,
//     mounted writable, whichever of the two came first;
//   - two patterns that may name the same directory, or one below the
//     other, name the owner at the same place (or neither does), so no
//     user's value of a variable can make a path of another user's, or a
//     shared one;
//   - a pattern without an owner segment must be declared shared.
//
// The manager writes the ledger in the same store transaction as the
// template, conditioned on the ledger's version, so two racing writes
// cannot both pass the rule against a ledger that holds neither. Deleting a
// template keeps its entries. Only an admin's retire removes one, after the
// host directories were cleaned, and only while no stored template and no
// instance mounts it writable.

// Bind is one bind source of a template.
type Bind struct {
	Field    string // where the template holds it, e.g. "volumes[0].source"
	Source   string // as the template writes it
	ReadOnly bool
	Shared   bool
}

// Problem is a refusal of one bind source, for the 422's field list.
type Problem struct{ Field, Message string }

// RetirePath is the admin route that retires a ledger entry, named by the
// messages that advise it.
func RetirePath(id string) string { return "DELETE /api/bind-ledger/" + id }

// EntryID is the ledger's name for a pattern: a short digest of it.
func EntryID(pattern string) string {
	sum := sha256.Sum256([]byte(pattern))
	return hex.EncodeToString(sum[:6])
}

// Binds returns the template's bind sources (the others volume types have
// no host path).
func Binds(t container.Template) []Bind {
	var out []Bind
	for i, v := range t.Volumes {
		if v.Type == container.VolumeBind {
			out = append(out, Bind{Field: fmt.Sprintf("volumes[%d].source", i), Source: v.Source, ReadOnly: v.ReadOnly, Shared: v.Shared})
		}
	}
	return out
}

// Record returns l with the binds of template tpl recorded: each pattern
// gets an entry (once), tpl in its Templates, and, when mounted writable,
// Writable set and tpl in WritableBy. Binds that do not parse are left out
// (template validation reports them). l itself is not changed.
func Record(l container.BindLedger, tpl string, binds []Bind, workspaceRoot string) container.BindLedger {
	out := l
	out.Entries = slices.Clone(l.Entries)
	for _, b := range binds {
		p, err := Parse(b.Source, workspaceRoot)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(out.Entries, func(e container.BindEntry) bool { return e.Pattern == p.Source })
		if i < 0 {
			out.Entries = append(out.Entries, container.BindEntry{ID: EntryID(p.Source), Pattern: p.Source})
			i = len(out.Entries) - 1
		}
		e := out.Entries[i]
		e.Templates = addName(e.Templates, tpl)
		e.Shared = e.Shared || b.Shared
		if !b.ReadOnly {
			e.Writable = true
			e.WritableBy = addName(e.WritableBy, tpl)
		}
		out.Entries[i] = e
	}
	slices.SortFunc(out.Entries, func(a, b container.BindEntry) int { return strings.Compare(a.Pattern, b.Pattern) })
	return out
}

// Covers reports whether l already records every bind as Record would, so
// a create from the template needs no ledger write.
func Covers(l container.BindLedger, tpl string, binds []Bind, workspaceRoot string) bool {
	for _, b := range binds {
		p, err := Parse(b.Source, workspaceRoot)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(l.Entries, func(e container.BindEntry) bool { return e.Pattern == p.Source })
		if i < 0 || !slices.Contains(l.Entries[i].Templates, tpl) ||
			(!b.ReadOnly && !slices.Contains(l.Entries[i].WritableBy, tpl)) || (b.Shared && !l.Entries[i].Shared) {
			return false
		}
	}
	return true
}

func addName(names []string, n string) []string {
	if slices.Contains(names, n) {
		return names
	}
	out := append(slices.Clone(names), n)
	slices.Sort(out)
	return out
}

// Check returns what refuses the binds of template tpl against the ledger
// before (the ledger as it was before they were recorded): every pair of
// one of them and any pattern of before or of binds that breaks the rules
// above. Pairs of two older entries are not its business (they were
// checked when stored, or seeded from templates stored before the ledger).
func Check(before container.BindLedger, tpl string, binds []Bind, workspaceRoot string) []Problem {
	after := Record(before, tpl, binds, workspaceRoot)
	wasWritable := map[string]bool{}
	for _, e := range before.Entries {
		wasWritable[e.Pattern] = e.Writable
	}
	type entry struct {
		container.BindEntry
		p Pattern
	}
	var all []entry
	byPattern := map[string]entry{}
	for _, e := range after.Entries {
		p, err := Parse(e.Pattern, "")
		if err != nil {
			continue
		}
		all = append(all, entry{e, p})
		byPattern[p.Source] = entry{e, p}
	}
	var out []Problem
	add := func(field, format string, args ...any) {
		pr := Problem{Field: field, Message: fmt.Sprintf(format, args...)}
		if !slices.Contains(out, pr) {
			out = append(out, pr)
		}
	}
	mine := map[string]bool{}
	for _, b := range binds {
		if p, err := Parse(b.Source, workspaceRoot); err == nil {
			mine[p.Source] = true
		}
	}
	for _, b := range binds {
		pb, err := Parse(b.Source, workspaceRoot)
		if err != nil {
			continue
		}
		if pb.Owner() < 0 && !b.Shared {
			add(b.Field, "%q names no owner: every user's containers would mount the same host directory; put $USERID (or $WORKSPACE_PATH) in it as a whole path element, or declare it shared (\"shared\": true)", b.Source)
		}
		me := byPattern[pb.Source]
		for _, e := range all {
			if e.Pattern == pb.Source {
				continue
			}
			switch {
			case e.Writable && e.p.MayContain(pb) && wasWritable[e.Pattern]:
				add(b.Field, "%q may lie below %q, which containers of template %s could write (now or in an earlier version): one of them could have replaced a directory on the way with a symlink to anywhere on the host, and the link stays there; move this source elsewhere, or, once no container can have written there, clean the host directories and retire the entry (%s)",
					b.Source, e.Pattern, names(e.WritableBy), RetirePath(e.ID))
			case e.Writable && e.p.MayContain(pb):
				// e is newly writable, by this very template.
				add(b.Field, "%q may lie below %q, which this template's containers could write: one of them could replace a directory on the way with a symlink to anywhere on the host; make that one read_only, or move one of them", b.Source, e.Pattern)
			case mine[e.Pattern] && pb.MayContain(e.p):
				// Two of this template's own: reported at the inner one.
			case me.Writable && pb.MayContain(e.p) && !wasWritable[pb.Source]:
				add(b.Field, "containers could write %q, which may contain %q (a bind source of template %s, now or in an earlier version): one of them could replace a directory on the way with a symlink to anywhere on the host; make this source read_only, or move it", b.Source, e.Pattern, names(e.Templates))
			case me.Writable && pb.MayContain(e.p):
				add(b.Field, "containers of template %s could write %q (now or in an earlier version), which may contain %q (a bind source of template %s, now or in an earlier version): a link planted there would redirect it; move this source elsewhere, or, once no container can have written there, clean the host directories and retire %q (%s) or %q (%s)",
					names(me.WritableBy), b.Source, e.Pattern, names(e.Templates), pb.Source, RetirePath(me.ID), e.Pattern, RetirePath(e.ID))
			}
			if (e.p.MayEqual(pb) || e.p.MayContain(pb) || pb.MayContain(e.p)) && e.p.Owner() != pb.Owner() {
				add(b.Field, "%q and %q (a bind source of template %s, now or in an earlier version) may name the same host directory, or one below the other, but %s: one user's containers could reach another user's files; move this source so that both name the owner at the same place, or under a directory of its own",
					b.Source, e.Pattern, names(e.Templates), ownerPlaces(pb, e.p))
			}
		}
	}
	return out
}

func ownerPlaces(a, b Pattern) string {
	switch {
	case a.Owner() < 0:
		return "only the other one names the owner ($USERID)"
	case b.Owner() < 0:
		return "only this one names the owner ($USERID)"
	}
	return fmt.Sprintf("they name the owner ($USERID) at different path elements (%d and %d)", a.Owner()+1, b.Owner()+1)
}

func names(ns []string) string {
	if len(ns) == 0 {
		return "(none)"
	}
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
