// Package hostpolicy is berth's one host-path policy: which host paths a
// Docker bind mount or a Kubernetes hostPath may name (the allowed roots),
// and which bind source patterns may be stored together, now and over time
// (the bind ledger). The manager, the Docker runtime and the Kubernetes
// runtime all call it.
package hostpolicy

import (
	"fmt"
	"path"
	"regexp"
	"strings"

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
// write, or ever could (a link stays on the host after its template
// changed or went: see ledger.go). Each bind source is read as a pattern
// of path segments, where a segment holding a runtime variable matches any
// one segment (a variable's value is one non-empty segment: no '/', not
// "." or "..", checked at create) and $WORKSPACE_PATH is
// container.workspace_root plus the owner segment. A read-only ancestor is
// harmless only if no container could ever write it. The runtimes repeat
// the check on the resolved paths of one spec (CheckSpec).

// Pattern is a bind source as path segments. Literal segments are in
// lit; a segment holding variables has wild set, with its literal prefix
// and suffix in pre and suf.
type Pattern struct {
	// Source is the pattern as the ledger keeps it: as the template wrote
	// it, with a leading $WORKSPACE_PATH written out (Normalize).
	Source string
	segs   []bindSegment
	owner  int // index in segs of the owner segment, -1 if none
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

// Normalize writes a leading $WORKSPACE_PATH of a bind source out as the
// workspace root and the owner segment, so that the same directory reads
// the same in the ledger whichever way a template named it.
func Normalize(source, workspaceRoot string) string {
	for _, ws := range []string{"$WORKSPACE_PATH", "${WORKSPACE_PATH}"} {
		if rest, ok := strings.CutPrefix(source, ws); ok && (rest == "" || rest[0] == '/') {
			root := strings.TrimSuffix(path.Clean(workspaceRoot), "/")
			return strings.ReplaceAll(root, "$", "$$") + "/$USERID" + rest
		}
	}
	return source
}

// Parse reads a bind source written with runtime variables. The source
// must be absolute and clean: no empty, "." or ".." segments, no NUL, ':'
// or ',' (Docker's bind syntax separators), and $WORKSPACE_PATH only as
// its whole first element. A segment that is exactly $USERID (or the one
// $WORKSPACE_PATH ends in) is the owner segment.
func Parse(source, workspaceRoot string) (Pattern, error) {
	p := Pattern{Source: source, owner: -1}
	if strings.ContainsAny(source, ":,\x00\x01") {
		return p, fmt.Errorf("must not contain ':', ',' or NUL")
	}
	p.Source = Normalize(source, workspaceRoot)
	for i, s := range strings.Split(strings.TrimSuffix(p.Source, "/"), "/") {
		if i > 0 && (s == "$USERID" || s == "${USERID}") {
			p.owner = i - 1
		}
	}
	marked, err := runvars.Expand(p.Source, markValues)
	if err != nil {
		return p, err
	}
	parts := strings.Split(marked, "/")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // a trailing slash names the same directory
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

// MayEqual reports whether, for some values of the variables, p and q
// name the same directory.
func (p Pattern) MayEqual(q Pattern) bool {
	if len(p.segs) != len(q.segs) {
		return false
	}
	for i, s := range p.segs {
		if !s.mayEqual(q.segs[i]) {
			return false
		}
	}
	return true
}

// Owner is the index of the owner segment among the path's segments (0 is
// the first below '/'), or -1 when the pattern names no owner.
func (p Pattern) Owner() int { return p.owner }

// MayContain reports whether, for some values of the variables, q names a
// directory strictly below the one p names.
func (p Pattern) MayContain(q Pattern) bool {
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

// Check reports whether the resolved path fits the pattern segment for
// segment: a variable's value that held a '/' or was empty (changing the
// number of segments), was "." or "..", or held ':', ',' or NUL, does not.
func (p Pattern) Check(resolved string) error {
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

// Matches reports whether a resolved host path is one the pattern names
// for some values of its variables.
func (p Pattern) Matches(resolved string) bool {
	parts := strings.Split(strings.TrimSuffix(path.Clean(resolved), "/"), "/")
	if len(parts) != len(p.segs)+1 || parts[0] != "" {
		return false
	}
	for i, s := range p.segs {
		got := parts[i+1]
		if (s.wild == nil && got != s.lit) || (s.wild != nil && !s.wild.MatchString(got)) {
			return false
		}
	}
	return true
}
