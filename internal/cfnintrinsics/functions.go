package cfnintrinsics

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func (e *Evaluator) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("a Ref of %T: want a name", arg)
		}
		return e.RefName(name)
	case "Condition":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("a Condition of %T: want a name", arg)
		}
		return e.Condition(name)
	case "Fn::If":
		args, ok := arg.([]any)
		if !ok || len(args) != 3 {
			return nil, errors.New("Fn::If wants [condition, then, else]")
		}
		name, ok := args[0].(string)
		if !ok {
			return nil, errors.New("Fn::If: the condition must be a name")
		}
		c, err := e.Condition(name)
		if err != nil {
			return nil, err
		}
		if c {
			return e.Eval(args[1])
		}
		return e.Eval(args[2])
	case "Fn::GetAtt":
		return e.getAtt(arg)
	}
	// The remaining functions take evaluated arguments.
	a, err := e.Eval(arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	switch fn {
	case "Fn::Sub":
		return e.sub(a)
	case "Fn::Join":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Join wants [delimiter, list]")
		}
		items, ok := l[1].([]any)
		if !ok {
			return nil, errors.New("Fn::Join: the second argument must be a list")
		}
		parts := make([]any, 0, 2*len(items))
		for i, it := range items {
			if i > 0 {
				parts = append(parts, Scalar(l[0]))
			}
			parts = append(parts, it)
		}
		return e.concat(parts), nil
	case "Fn::Select":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Select wants [index, list]")
		}
		i, err := strconv.Atoi(Scalar(l[0]))
		list, ok := l[1].([]any)
		if err != nil || !ok || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("Fn::Select: index %v out of %v", l[0], l[1])
		}
		return list[i], nil
	case "Fn::Split":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Split wants [delimiter, string]")
		}
		text, ok := l[1].(string)
		if !ok {
			return e.unknown(fn, a)
		}
		var out []any
		for _, s := range strings.Split(text, Scalar(l[0])) {
			out = append(out, s)
		}
		return out, nil
	case "Fn::Equals":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Equals wants two values")
		}
		if e.Equal != nil {
			return e.Equal(l[0], l[1]), nil
		}
		return Scalar(l[0]) == Scalar(l[1]), nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		return logical(fn, a)
	case "Fn::FindInMap":
		return e.findInMap(a)
	case "Fn::Base64":
		s, ok := a.(string)
		if !ok {
			return e.unknown(fn, a)
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "Fn::GetAZs":
		r, ok := e.Pseudo["AWS::Region"]
		if !ok {
			return e.unknown(fn, a)
		}
		return []any{r + "a", r + "b", r + "c"}, nil
	}
	return e.unknown(fn, a)
}

// getAtt is Fn::GetAtt, "Resource.Attribute" or [resource, attribute].
func (e *Evaluator) getAtt(arg any) (any, error) {
	var res, attr string
	switch a := arg.(type) {
	case string:
		res, attr, _ = strings.Cut(a, ".")
	case []any:
		r, err := e.Eval(a)
		if err != nil {
			return nil, err
		}
		if l, _ := r.([]any); len(l) == 2 {
			res, _ = l[0].(string)
			attr, _ = l[1].(string)
		}
	}
	if res == "" || attr == "" {
		return nil, fmt.Errorf("Fn::GetAtt of %v", arg)
	}
	return e.GetAtt(res, attr)
}

// logical is Fn::Not, Fn::And and Fn::Or on evaluated conditions.
func logical(fn string, a any) (any, error) {
	l, ok := a.([]any)
	if !ok || len(l) == 0 {
		return nil, fmt.Errorf("%s wants a list of conditions", fn)
	}
	bs := make([]bool, len(l))
	for i, c := range l {
		b, ok := c.(bool)
		if !ok {
			return nil, fmt.Errorf("%s: %v is not a condition", fn, c)
		}
		bs[i] = b
	}
	switch fn {
	case "Fn::Not":
		return !bs[0], nil
	case "Fn::And":
		for _, b := range bs {
			if !b {
				return false, nil
			}
		}
		return true, nil
	default:
		for _, b := range bs {
			if b {
				return true, nil
			}
		}
		return false, nil
	}
}

// findInMap is Fn::FindInMap: [map, key, key] or [map, key, key, {DefaultValue: v}].
func (e *Evaluator) findInMap(a any) (any, error) {
	l, ok := a.([]any)
	if !ok || len(l) < 3 {
		return nil, errors.New("Fn::FindInMap wants [map, key, key]")
	}
	maps, _ := e.Doc["Mappings"].(map[string]any)
	m1, _ := maps[Scalar(l[0])].(map[string]any)
	m2, _ := m1[Scalar(l[1])].(map[string]any)
	v, ok := m2[Scalar(l[2])]
	if !ok {
		if len(l) == 4 {
			if d, ok := l[3].(map[string]any); ok {
				if dv, ok := d["DefaultValue"]; ok {
					return dv, nil
				}
			}
		}
		return nil, fmt.Errorf("Fn::FindInMap: no %v", l[:3])
	}
	return e.Eval(v)
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// sub is Fn::Sub: "${Name}", "${Resource.Attribute}" and "${!Literal}".
func (e *Evaluator) sub(a any) (any, error) {
	var s string
	vars := map[string]any{}
	switch x := a.(type) {
	case string:
		s = x
	case []any:
		if len(x) != 2 {
			return nil, errors.New("Fn::Sub wants a string or [string, variables]")
		}
		s, _ = x[0].(string)
		m, ok := x[1].(map[string]any)
		if !ok {
			return nil, errors.New("Fn::Sub: the variables must be a map")
		}
		vars = m
	default:
		return nil, fmt.Errorf("Fn::Sub of %T", a)
	}
	var parts []any
	last := 0
	for _, m := range subVar.FindAllStringSubmatchIndex(s, -1) {
		parts = append(parts, s[last:m[0]])
		last = m[1]
		name := s[m[2]:m[3]]
		if strings.HasPrefix(name, "!") {
			parts = append(parts, "${"+name[1:]+"}")
			continue
		}
		if v, ok := vars[name]; ok {
			parts = append(parts, v)
			continue
		}
		var v any
		var err error
		if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			v, err = e.GetAtt(res, attr)
		} else {
			v, err = e.RefName(name)
		}
		if err != nil {
			return nil, fmt.Errorf("Fn::Sub ${%s}: %w", name, err)
		}
		parts = append(parts, v)
	}
	parts = append(parts, s[last:])
	return e.concat(parts), nil
}

// Scalar formats a resolved value as CloudFormation would in a string.
func Scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		ss := make([]string, len(x))
		for i, e := range x {
			ss[i] = Scalar(e)
		}
		return strings.Join(ss, ",")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Sprintf("%v", keys)
	}
	return fmt.Sprint(v)
}
