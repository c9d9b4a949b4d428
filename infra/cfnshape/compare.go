package cfnshape

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Compare pairs the resources of want and got without their logical ids and returns one
// readable line per difference; none means the two are the same shape for shape.
//
// Pairing refines labels: first a resource is known by its type, then by its properties with
// every reference replaced by the label of what it references, until the labels stop
// splitting. Resources with equal final labels are identical, references included. What is
// left is paired within a type by the fewest differing properties, and each such pair is
// reported property by property, references named by want's logical ids.
func Compare(want, got *Resolved, wantName, gotName string) []string {
	wl, gl := refine(want, got)
	pairs := map[string]string{} // want id → got id
	byLabel := map[string][]string{}
	for _, id := range sortedIDs(got) {
		byLabel[gl[id]] = append(byLabel[gl[id]], id)
	}
	var wantLeft []string
	for _, id := range sortedIDs(want) {
		if ids := byLabel[wl[id]]; len(ids) > 0 {
			pairs[id] = ids[0]
			byLabel[wl[id]] = ids[1:]
		} else {
			wantLeft = append(wantLeft, id)
		}
	}
	var gotLeft []string
	for _, ids := range byLabel {
		gotLeft = append(gotLeft, ids...)
	}
	sort.Strings(gotLeft)

	// Pair the rest by closeness; names from earlier pairs make later diffs readable, so go
	// twice.
	var diffs map[string][]string
	for range 2 {
		partner := map[string]string{}
		for w, g := range pairs {
			partner[g] = w
		}
		wantName := func(r Ref) string { return r.ID }
		gotName := func(r Ref) string {
			if w, ok := partner[r.ID]; ok {
				return w
			}
			if res, ok := got.Resources[r.ID]; ok {
				return res.Type + " " + r.ID
			}
			return r.ID
		}
		diffs = map[string][]string{}
		used := map[string]bool{}
		for _, w := range wantLeft {
			best, bestDiff := "", []string(nil)
			for _, g := range gotLeft {
				if used[g] || got.Resources[g].Type != want.Resources[w].Type {
					continue
				}
				d := diffBodies(want.Resources[w].Body, wantName, got.Resources[g].Body, gotName)
				if best == "" || len(d) < len(bestDiff) {
					best, bestDiff = g, d
				}
			}
			if best != "" {
				used[best] = true
				pairs[w] = best
				diffs[w] = bestDiff
			}
		}
	}

	var out []string
	paired := map[string]bool{}
	for _, w := range wantLeft {
		g, ok := pairs[w]
		if !ok {
			out = append(out, fmt.Sprintf("%s %s: only in %s", want.Resources[w].Type, w, wantName))
			continue
		}
		paired[g] = true
		for _, d := range diffs[w] {
			out = append(out, fmt.Sprintf("%s %s (%s: %s): %s", want.Resources[w].Type, w, gotName, g, d))
		}
	}
	for _, g := range gotLeft {
		if !paired[g] {
			out = append(out, fmt.Sprintf("%s %s: only in %s", got.Resources[g].Type, g, gotName))
		}
	}
	wo, go_ := setOf(want.Outputs), setOf(got.Outputs)
	for _, o := range want.Outputs {
		if !go_[o] {
			out = append(out, fmt.Sprintf("output %s: only in %s", o, wantName))
		}
	}
	for _, o := range got.Outputs {
		if !wo[o] {
			out = append(out, fmt.Sprintf("output %s: only in %s", o, gotName))
		}
	}
	return out
}

// refine labels the resources of both templates together (see Compare).
func refine(a, b *Resolved) (map[string]string, map[string]string) {
	la, lb := map[string]string{}, map[string]string{}
	for id, r := range a.Resources {
		la[id] = r.Type
	}
	for id, r := range b.Resources {
		lb[id] = r.Type
	}
	distinct := func() int {
		s := map[string]bool{}
		for _, l := range la {
			s["a"+l] = true
		}
		for _, l := range lb {
			s["b"+l] = true
		}
		return len(s)
	}
	n := distinct()
	for range len(a.Resources) + len(b.Resources) {
		na, nb := relabel(a, la), relabel(b, lb)
		la, lb = na, nb
		m := distinct()
		if m == n {
			break
		}
		n = m
	}
	return la, lb
}

// relabel is one refinement round: a resource's new label hashes its body with references
// replaced by the labels of their targets, and the labels of the resources that reference it
// (so that identical resources, such as log groups, are told apart by who uses them).
func relabel(r *Resolved, labels map[string]string) map[string]string {
	referrers := map[string][]string{}
	for id, res := range r.Resources {
		for _, to := range refsIn(res.Body) {
			referrers[to] = append(referrers[to], labels[id])
		}
	}
	out := map[string]string{}
	for id, res := range r.Resources {
		b, _ := json.Marshal(render(res.Body, func(x Ref) string {
			if l, ok := labels[x.ID]; ok {
				return l
			}
			return x.ID
		}))
		from := referrers[id]
		sort.Strings(from)
		sum := sha256.Sum256(append(b, strings.Join(from, ",")...))
		out[id] = res.Type + "#" + hex.EncodeToString(sum[:8])
	}
	return out
}

// refsIn lists the ids v references.
func refsIn(v any) []string {
	switch v := v.(type) {
	case Ref:
		return []string{v.ID}
	case concat:
		var out []string
		for _, p := range v {
			out = append(out, refsIn(p)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, refsIn(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, refsIn(e)...)
		}
		return out
	}
	return nil
}

// diffBodies lists the properties that differ: "path: want …, got …", and for sets the
// elements only one side has.
func diffBodies(a map[string]any, an func(Ref) string, b map[string]any, bn func(Ref) string) []string {
	fa, fb := map[string]any{}, map[string]any{}
	flatten("", render(a, an), fa)
	flatten("", render(b, bn), fb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		va, oka := fa[k]
		vb, okb := fb[k]
		sa, aSet := va.([]string)
		sb, bSet := vb.([]string)
		switch {
		case !oka:
			out = append(out, fmt.Sprintf("%s: missing, got %s", k, show(vb)))
		case !okb:
			out = append(out, fmt.Sprintf("%s: want %s, missing", k, show(va)))
		case aSet && bSet:
			if only := minus(sa, sb); len(only) > 0 {
				out = append(out, fmt.Sprintf("%s: missing %s", k, strings.Join(only, "; ")))
			}
			if only := minus(sb, sa); len(only) > 0 {
				out = append(out, fmt.Sprintf("%s: extra %s", k, strings.Join(only, "; ")))
			}
		case show(va) != show(vb):
			out = append(out, fmt.Sprintf("%s: want %s, got %s", k, show(va), show(vb)))
		}
	}
	sort.Strings(out)
	return out
}

func show(v any) string {
	if s, ok := v.([]string); ok {
		return "[" + strings.Join(s, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// minus is the elements of a not in b.
func minus(a, b []string) []string {
	in := setOf(b)
	var out []string
	for _, e := range a {
		if !in[e] {
			out = append(out, e)
		}
	}
	return out
}

func sortedIDs(r *Resolved) []string {
	ids := make([]string, 0, len(r.Resources))
	for id := range r.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func setOf(s []string) map[string]bool {
	m := map[string]bool{}
	for _, e := range s {
		m[e] = true
	}
	return m
}

// Summary counts resources by type, for a test's log.
func Summary(r *Resolved) string {
	n := map[string]int{}
	for _, res := range r.Resources {
		n[res.Type]++
	}
	var parts []string
	for t, c := range n {
		parts = append(parts, fmt.Sprintf("%s×%d", t, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
