package manager

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runvars"
)

// Bind mounts and symlinks: why berth checks patterns, not directories.
//
// The engine resolves a bind source on its host, following symlinks. A
// container that can write a directory can put a symlink anywhere below
// it, so if it can write an ancestor of another bind source (say
// <root>/alice, with another template mounting <root>/alice/evil), it can
// make that source point at any host directory, and the next container
// mounting it gets that directory. Checking the host path before the
// create does not help: the check runs on another machine for remote
// engines, and a running container can swap a directory for a symlink
// between any check and the engine's mount.
//
// So berth makes the situation impossible instead of detecting it: no bind
// source may lie strictly below a bind source that some container may
// write. Each bind source is read as a pattern of path segments, where a
// segment holding a runtime variable matches any one segment (a variable's
// value is one non-empty segment: no '/', not "." or "..", checked at
// create) and $WORKSPACE_PATH is container.workspace_root plus one such
// segment. A writable pattern that may be a proper ancestor of another
// pattern, of the same template or of any other stored template, is
// refused when the template is written, and again at every create (so two
// templates stored by racing writes, or before this rule, cannot be used).
// A read-only ancestor is harmless: its containers cannot plant anything.
// The docker runtime repeats the check on the resolved paths of one spec.

// bindPattern is a bind source as path segments. Literal segments are in
// lit; a segment holding variables has wild set, with its literal prefix
// and suffix in pre and suf.
type bindPattern struct {
	source   string // as the template writes it
	readOnly bool
	segs     []bindSegment
}

type bindSegment struct {
	lit      string
	wild     *regexp.Regexp // nil for a literal segment
	pre, suf string
}

// Sentinels standing in for variable values while a source is split into
// segments: neither can appear in a valid path.
const (
	varMark       = "\x00"
	workspaceMark = "\x01"
)

var markValues = func() map[string]string {
	m := map[string]string{}
	for _, v := range runvars.Declared {
		m[v.Name] = varMark
	}
	m["WORKSPACE_PATH"] = workspaceMark
	return m
}()

// parseBindPattern reads a bind source written with runtime variables. The
// source must be absolute and clean: no empty, "." or ".." segments, no
// NUL, ':' or ',' (Docker's bind syntax separators), and $WORKSPACE_PATH
// only as its whole first element.
func parseBindPattern(source, workspaceRoot string, readOnly bool) (bindPattern, error) {
	p := bindPattern{source: source, readOnly: readOnly}
	if strings.ContainsAny(source, ":,\x00\x01") {
		return p, fmt.Errorf("must not contain ':', ',' or NUL")
	}
	marked, err := runvars.Expand(source, markValues)
	if err != nil {
		return p, err
	}
	parts := strings.Split(marked, "/")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // a trailing slash names the same directory
	}
	if parts[0] == workspaceMark {
		root := strings.Split(strings.TrimSuffix(path.Clean(workspaceRoot), "/"), "/")
		parts = append(append(root, varMark), parts[1:]...)
	}
	if parts[0] != "" || len(parts) < 2 {
		return p, fmt.Errorf("must be an absolute path (or start with $WORKSPACE_PATH)")
	}
	for _, s := range parts[1:] {
		switch {
		case strings.Contains(s, workspaceMark):
			return p, fmt.Errorf("$WORKSPACE_PATH is a whole path: it may only start a bind source")
		case s == "" || s == "." || s == "..":
			return p, fmt.Errorf("must be a clean path (no empty, '.' or '..' elements)")
		case !strings.Contains(s, varMark):
			p.segs = append(p.segs, bindSegment{lit: s})
			continue
		}
		lits := strings.Split(s, varMark)
		quoted := make([]string, len(lits))
		for i, l := range lits {
			quoted[i] = regexp.QuoteMeta(l)
		}
		p.segs = append(p.segs, bindSegment{
			wild: regexp.MustCompile("^" + strings.Join(quoted, ".+") + "$"),
			pre:  lits[0], suf: lits[len(lits)-1],
		})
	}
	return p, nil
}

// mayEqual reports whether the two segments can name the same directory
// for some variable values. Two wildcard segments are compared by their
// literal ends only, which can only err towards "yes".
func (a bindSegment) mayEqual(b bindSegment) bool {
	switch {
	case a.wild == nil && b.wild == nil:
		return a.lit == b.lit
	case a.wild != nil && b.wild == nil:
		return a.wild.MatchString(b.lit)
	case a.wild == nil:
		return b.wild.MatchString(a.lit)
	}
	return (strings.HasPrefix(a.pre, b.pre) || strings.HasPrefix(b.pre, a.pre)) &&
		(strings.HasSuffix(a.suf, b.suf) || strings.HasSuffix(b.suf, a.suf))
}

// mayContain reports whether, for some values of the variables, q names a
// directory strictly below the one p names.
func (p bindPattern) mayContain(q bindPattern) bool {
	if len(p.segs) >= len(q.segs) {
		return false
	}
	for i, s := range p.segs {
		if !s.mayEqual(q.segs[i]) {
			return false
		}
	}
	return true
}

// exposes reports whether containers mounting p could plant a symlink on
// the way to q: p is writable and may be a proper ancestor of q.
func (p bindPattern) exposes(q bindPattern) bool { return !p.readOnly && p.mayContain(q) }

// check reports whether the resolved path fits the pattern segment for
// segment: a variable's value that held a '/' or was empty (changing the
// number of segments), was "." or "..", or held ':', ',' or NUL, does not.
func (p bindPattern) check(resolved string) error {
	parts := strings.Split(strings.TrimSuffix(resolved, "/"), "/")
	if len(parts) != len(p.segs)+1 || parts[0] != "" {
		return fmt.Errorf("resolves to %q: every runtime variable in a bind source must be one non-empty path element", resolved)
	}
	for i, s := range p.segs {
		got := parts[i+1]
		if s.wild == nil {
			continue // literal: equal by construction
		}
		if got == "." || got == ".." || strings.ContainsAny(got, ":,\x00") || !s.wild.MatchString(got) {
			return fmt.Errorf("resolves to %q: every runtime variable in a bind source must be one non-empty path element other than '.' or '..', without ':', ',' or NUL", resolved)
		}
	}
	return nil
}

// namedBind is a template's bind pattern with the field it came from.
type namedBind struct {
	field string
	bindPattern
}

// bindPatterns returns the template's bind sources that parse (the others
// are reported by validateVolume).
func (m *Manager) bindPatterns(t container.Template) []namedBind {
	var out []namedBind
	for i, v := range t.Volumes {
		if v.Type != container.VolumeBind {
			continue
		}
		p, err := parseBindPattern(v.Source, m.workspaceRoot, v.ReadOnly)
		if err == nil {
			out = append(out, namedBind{field: fmt.Sprintf("volumes[%d].source", i), bindPattern: p})
		}
	}
	return out
}

// checkBindNesting adds a field error for every bind source of t that a
// writable bind source may contain, within t and against every template in
// others except t's own earlier version.
func (m *Manager) checkBindNesting(f *fields, t container.Template, others []container.Template) {
	mine := m.bindPatterns(t)
	for _, p := range mine {
		for _, q := range mine {
			if p.field != q.field && p.exposes(q.bindPattern) {
				f.add(q.field, "%q may lie below %q (%s), which this template's containers can write: a container could replace a directory on the way with a symlink to anywhere on the host; make %s read_only or move one of them", q.source, p.source, p.field, p.field)
			}
		}
	}
	for _, o := range others {
		if o.Name == t.Name {
			continue
		}
		for _, q := range m.bindPatterns(o) {
			for _, p := range mine {
				switch {
				case p.exposes(q.bindPattern):
					f.add(p.field, "containers could write %q, which may contain template %q's bind source %q: one of them could replace a directory on the way with a symlink to anywhere on the host; make it read_only or move one of them", p.source, o.Name, q.source)
				case q.exposes(p.bindPattern):
					f.add(p.field, "%q may lie below template %q's writable bind source %q: its containers could replace a directory on the way with a symlink to anywhere on the host; move it, or make that one read_only", p.source, o.Name, q.source)
				}
			}
		}
	}
}
