package emulate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// filter is an event source mapping's FilterCriteria: a record is delivered
// when it matches any pattern (Lambda event filtering), dropped otherwise.
type filter []map[string]any

func parseFilter(patterns []string) (filter, error) {
	var f filter
	for _, p := range patterns {
		var m map[string]any
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			return nil, fmt.Errorf("filter pattern %s: %w", p, err)
		}
		f = append(f, m)
	}
	return f, nil
}

// match reports whether the record (its JSON as delivered) passes.
func (f filter) match(record any) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		if matchObject(p, record) {
			return true
		}
	}
	return false
}

func matchObject(pattern map[string]any, value any) bool {
	obj, _ := value.(map[string]any)
	for k, pv := range pattern {
		v, present := obj[k]
		switch p := pv.(type) {
		case map[string]any:
			if !present || !matchObject(p, v) {
				return false
			}
		case []any:
			if !matchAny(p, v, present) {
				return false
			}
		default:
			return false // a pattern's leaves are lists
		}
	}
	return true
}

// matchAny: one of the pattern's alternatives matches the value (or, for a
// list value, one of its elements).
func matchAny(alts []any, v any, present bool) bool {
	vals := []any{v}
	if l, ok := v.([]any); ok {
		vals = l
	}
	for _, a := range alts {
		if op, ok := a.(map[string]any); ok {
			if ex, ok := op["exists"].(bool); ok {
				if ex == present {
					return true
				}
				continue
			}
			if !present {
				continue
			}
			for _, x := range vals {
				if matchOp(op, x) {
					return true
				}
			}
			continue
		}
		if !present {
			continue
		}
		for _, x := range vals {
			if equalLeaf(a, x) {
				return true
			}
		}
	}
	return false
}

func equalLeaf(a, b any) bool {
	if af, ok := a.(float64); ok {
		bf, ok := b.(float64)
		return ok && af == bf
	}
	return a == b
}

func matchOp(op map[string]any, x any) bool {
	for name, arg := range op {
		s, isStr := x.(string)
		switch name {
		case "prefix":
			p, _ := arg.(string)
			return isStr && strings.HasPrefix(s, p)
		case "suffix":
			p, _ := arg.(string)
			return isStr && strings.HasSuffix(s, p)
		case "equals-ignore-case":
			p, _ := arg.(string)
			return isStr && strings.EqualFold(s, p)
		case "anything-but":
			switch a := arg.(type) {
			case []any:
				for _, e := range a {
					if equalLeaf(e, x) {
						return false
					}
				}
				return true
			case map[string]any:
				return !matchOp(a, x)
			default:
				return !equalLeaf(a, x)
			}
		case "numeric":
			n, ok := x.(float64)
			ops, _ := arg.([]any)
			if !ok || len(ops)%2 != 0 {
				return false
			}
			for i := 0; i < len(ops); i += 2 {
				o, _ := ops[i].(string)
				v, _ := ops[i+1].(float64)
				var r bool
				switch o {
				case "=":
					r = n == v
				case "<":
					r = n < v
				case "<=":
					r = n <= v
				case ">":
					r = n > v
				case ">=":
					r = n >= v
				}
				if !r {
					return false
				}
			}
			return true
		}
	}
	return false
}

// jsonValue is v as decoded JSON (what filter patterns are matched on).
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
