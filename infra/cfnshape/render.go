package cfnshape

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// render turns a resolved value into plain JSON values: a reference becomes "<name>" or
// "<name>.Att" with name(ref), a joined string its text, and every list is sorted (no list
// compared here carries meaning in its order: key schemas name their key types, policies and
// filters are sets).
func render(v any, name func(Ref) string) any {
	switch v := v.(type) {
	case Ref:
		if v.Att != "" {
			return "<" + name(v) + ">." + v.Att
		}
		return "<" + name(v) + ">"
	case concat:
		var b strings.Builder
		for _, p := range v {
			if s, ok := p.(string); ok {
				b.WriteString(s)
			} else {
				b.WriteString("${" + strings.Trim(fmt.Sprint(render(p, name)), "\"") + "}")
			}
		}
		return b.String()
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = render(e, name)
		}
		return out
	case []any:
		out := make([]any, len(v))
		keys := make([]string, len(v))
		for i, e := range v {
			out[i] = render(e, name)
			b, _ := json.Marshal(out[i])
			keys[i] = string(b)
		}
		sort.Sort(byKey{out, keys})
		return out
	default:
		return v
	}
}

type byKey struct {
	items []any
	keys  []string
}

func (b byKey) Len() int           { return len(b.items) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.items[i], b.items[j] = b.items[j], b.items[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}

// flatten lists the leaves of a rendered value as path → value, for diffs. A list of scalars
// is one leaf, a set ([]string), so that one element more or less is one difference.
func flatten(prefix string, v any, out map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[prefix] = "{}"
		}
		for k, e := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		if len(v) == 0 {
			out[prefix] = "[]"
		}
		if scalars(v) {
			set := make([]string, len(v))
			for i, e := range v {
				set[i] = fmt.Sprint(e)
			}
			out[prefix] = set
			return
		}
		for i, e := range v {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		out[prefix] = fmt.Sprint(v)
	}
}

func scalars(v []any) bool {
	for _, e := range v {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}
