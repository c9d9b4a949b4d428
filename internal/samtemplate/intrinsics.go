package samtemplate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// noValue is what AWS::NoValue evaluates to: the key or list element that
// holds it is dropped, as CloudFormation does.
type noValue struct{}

// evaluator resolves CloudFormation's intrinsic functions in a template
// decoded from JSON (goformation turns YAML's short tags such as !Ref into
// their long form). Parameters come from the template's defaults and the
// overrides; resources from ref and getAtt, which the Stack supplies.
type evaluator struct {
	doc        map[string]any
	params     map[string]any // effective parameter values (strings or lists)
	conditions map[string]bool
	evaluating map[string]bool // conditions being evaluated (cycle check)
	pseudo     map[string]string
	ref        func(logicalID string) (any, error)
	getAtt     func(logicalID, attr string) (any, error)
}

var errCycle = errors.New("condition refers to itself")

func (e *evaluator) condition(name string) (bool, error) {
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	if e.evaluating[name] {
		return false, fmt.Errorf("condition %s: %w", name, errCycle)
	}
	conds, _ := e.doc["Conditions"].(map[string]any)
	raw, ok := conds[name]
	if !ok {
		return false, fmt.Errorf("no condition named %q", name)
	}
	e.evaluating[name] = true
	v, err := e.eval(raw)
	delete(e.evaluating, name)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is %T, not a boolean", name, v)
	}
	e.conditions[name] = b
	return b, nil
}

// eval returns v with every intrinsic function resolved.
func (e *evaluator) eval(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return e.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, item := range x {
			r, err := e.eval(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, drop := r.(noValue); !drop {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, item := range x {
			r, err := e.eval(item)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if _, drop := r.(noValue); !drop {
				out = append(out, r)
			}
		}
		return out, nil
	}
	return v, nil
}

func (e *evaluator) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("Ref of %T", arg)
		}
		return e.refName(name)
	case "Condition":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("Condition of %T", arg)
		}
		return e.condition(name)
	case "Fn::If":
		args, ok := arg.([]any)
		if !ok || len(args) != 3 {
			return nil, errors.New("Fn::If wants [condition, then, else]")
		}
		name, ok := args[0].(string)
		if !ok {
			return nil, errors.New("Fn::If: the condition must be a name")
		}
		c, err := e.condition(name)
		if err != nil {
			return nil, err
		}
		if c {
			return e.eval(args[1])
		}
		return e.eval(args[2])
	case "Fn::GetAtt":
		var res, attr string
		switch a := arg.(type) {
		case string:
			res, attr, _ = strings.Cut(a, ".")
		case []any:
			r, err := e.eval(a)
			if err != nil {
				return nil, err
			}
			l := r.([]any)
			if len(l) == 2 {
				res, _ = l[0].(string)
				attr, _ = l[1].(string)
			}
		}
		if res == "" || attr == "" {
			return nil, fmt.Errorf("Fn::GetAtt of %v", arg)
		}
		return e.getAtt(res, attr)
	}
	// The remaining functions take evaluated arguments.
	a, err := e.eval(arg)
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
		parts, ok := l[1].([]any)
		if !ok {
			return nil, errors.New("Fn::Join: the second argument must be a list")
		}
		ss := make([]string, len(parts))
		for i, p := range parts {
			ss[i] = scalar(p)
		}
		return strings.Join(ss, scalar(l[0])), nil
	case "Fn::Select":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Select wants [index, list]")
		}
		i, err := strconv.Atoi(scalar(l[0]))
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
		var out []any
		for _, s := range strings.Split(scalar(l[1]), scalar(l[0])) {
			out = append(out, s)
		}
		return out, nil
	case "Fn::Equals":
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return nil, errors.New("Fn::Equals wants two values")
		}
		return scalar(l[0]) == scalar(l[1]), nil
	case "Fn::Not", "Fn::And", "Fn::Or":
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
	case "Fn::FindInMap":
		l, ok := a.([]any)
		if !ok || len(l) < 3 {
			return nil, errors.New("Fn::FindInMap wants [map, key, key]")
		}
		maps, _ := e.doc["Mappings"].(map[string]any)
		m1, _ := maps[scalar(l[0])].(map[string]any)
		m2, _ := m1[scalar(l[1])].(map[string]any)
		v, ok := m2[scalar(l[2])]
		if !ok {
			if len(l) == 4 { // [map, key, key, {DefaultValue: v}]
				if d, ok := l[3].(map[string]any); ok {
					if dv, ok := d["DefaultValue"]; ok {
						return dv, nil
					}
				}
			}
			return nil, fmt.Errorf("Fn::FindInMap: no %v", l[:3])
		}
		return e.eval(v)
	case "Fn::Base64":
		return base64.StdEncoding.EncodeToString([]byte(scalar(a))), nil
	case "Fn::GetAZs":
		r := e.pseudo["AWS::Region"]
		return []any{r + "a", r + "b", r + "c"}, nil
	}
	return nil, fmt.Errorf("%s is not supported here", fn)
}

// refName resolves a Ref: a pseudo parameter, a parameter or a resource.
func (e *evaluator) refName(name string) (any, error) {
	if name == "AWS::NoValue" {
		return noValue{}, nil
	}
	if v, ok := e.pseudo[name]; ok {
		return v, nil
	}
	if strings.HasPrefix(name, "AWS::") {
		return nil, fmt.Errorf("pseudo parameter %s is not supported here", name)
	}
	if v, ok := e.params[name]; ok {
		return v, nil
	}
	return e.ref(name)
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// sub is Fn::Sub: "${Name}", "${Resource.Attribute}" and "${!Literal}".
func (e *evaluator) sub(a any) (any, error) {
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
	var firstErr error
	out := subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		if v, ok := vars[name]; ok {
			return scalar(v)
		}
		var v any
		var err error
		if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			v, err = e.getAtt(res, attr)
		} else {
			v, err = e.refName(name)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("Fn::Sub ${%s}: %w", name, err)
		}
		return scalar(v)
	})
	return out, firstErr
}

// scalar formats a resolved value as CloudFormation would in a string.
func scalar(v any) string {
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
			ss[i] = scalar(e)
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
