// Package cfnshape compares two CloudFormation templates resource for resource, ignoring
// logical ids: the shapes of berth's stack written as template.yaml (after the SAM transform)
// and as the CDK app must be the same.
//
// Resolve evaluates a template for one set of parameter values (conditions, Fn::If,
// Fn::FindInMap, Fn::Sub, Fn::Join, parameter references) and rewrites what the two tools
// spell differently but means the same (see normalize.go); Compare pairs the resources and
// reports every difference as a readable line.
package cfnshape

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Ref is a reference to another resource of the same template: Ref (Att empty) or
// Fn::GetAtt.
type Ref struct {
	ID  string
	Att string
}

// concat is a string built from literal parts and references (Fn::Sub, Fn::Join).
type concat []any

// noValue is AWS::NoValue: the key or element that holds it is removed.
type noValueT struct{}

var noValue = noValueT{}

// Resource is one resolved resource. Body holds the properties and the deletion policies,
// every scalar a string, references as Ref, joined strings as concat.
type Resource struct {
	ID   string
	Type string
	Body map[string]any
}

// Resolved is a template evaluated for one set of parameter values.
type Resolved struct {
	Resources map[string]*Resource
	// Outputs are the names of the outputs that exist for these parameters.
	Outputs []string
}

// Pseudo-parameter values. The partition and URL suffix are the commercial ones, which the SAM
// translator writes literally; the stack id is an example one, so that the parts both templates
// take of it (Fn::Split, Fn::Select) compare; the rest stay symbolic.
var pseudo = map[string]string{
	"AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com",
	"AWS::StackId":   "arn:aws:cloudformation:eu-west-1:123456789012:stack/berth/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
}

type resolver struct {
	tpl        map[string]any
	params     map[string]any
	conditions map[string]bool
	condDefs   map[string]any
	resources  map[string]any
}

// Resolve evaluates tpl (a decoded JSON template) with the given parameter values; a parameter
// not given takes its default.
func Resolve(tpl map[string]any, values map[string]string) (*Resolved, error) {
	r := &resolver{
		tpl:        tpl,
		params:     map[string]any{},
		conditions: map[string]bool{},
		condDefs:   asMap(tpl["Conditions"]),
		resources:  asMap(tpl["Resources"]),
	}
	for name, def := range asMap(tpl["Parameters"]) {
		d := asMap(def)
		v, ok := values[name]
		if !ok {
			dv, has := d["Default"]
			if !has {
				return nil, fmt.Errorf("parameter %s: no value and no default", name)
			}
			v = scalar(dv)
		}
		if strings.Contains(fmt.Sprint(d["Type"]), "List") {
			var list []any
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					list = append(list, s)
				}
			}
			r.params[name] = list
		} else {
			r.params[name] = v
		}
	}
	for name := range values {
		if _, ok := r.params[name]; !ok {
			return nil, fmt.Errorf("parameter %s: not in the template", name)
		}
	}
	out := &Resolved{Resources: map[string]*Resource{}}
	for id, raw := range r.resources {
		res := asMap(raw)
		if c, ok := res["Condition"].(string); ok {
			on, err := r.condition(c)
			if err != nil {
				return nil, fmt.Errorf("resource %s: %w", id, err)
			}
			if !on {
				continue
			}
		}
		body := map[string]any{}
		if props, ok := res["Properties"]; ok {
			v, err := r.resolve(props)
			if err != nil {
				return nil, fmt.Errorf("resource %s: %w", id, err)
			}
			body["Properties"] = v
		} else {
			body["Properties"] = map[string]any{}
		}
		for _, k := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
			body[k] = "Delete"
			if v, ok := res[k]; ok {
				body[k] = scalar(v)
			}
		}
		out.Resources[id] = &Resource{ID: id, Type: fmt.Sprint(res["Type"]), Body: body}
	}
	for name, raw := range asMap(tpl["Outputs"]) {
		if c, ok := asMap(raw)["Condition"].(string); ok {
			on, err := r.condition(c)
			if err != nil {
				return nil, fmt.Errorf("output %s: %w", name, err)
			}
			if !on {
				continue
			}
		}
		out.Outputs = append(out.Outputs, name)
	}
	sort.Strings(out.Outputs)
	return out, nil
}

func (r *resolver) condition(name string) (bool, error) {
	if v, ok := r.conditions[name]; ok {
		return v, nil
	}
	def, ok := r.condDefs[name]
	if !ok {
		return false, fmt.Errorf("condition %s: not defined", name)
	}
	v, err := r.evalCondition(def)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	r.conditions[name] = v
	return v, nil
}

func (r *resolver) evalCondition(def any) (bool, error) {
	m := asMap(def)
	if len(m) != 1 {
		return false, fmt.Errorf("not a condition function: %v", def)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return r.condition(fmt.Sprint(arg))
		case "Fn::Equals":
			if len(args) != 2 {
				return false, fmt.Errorf("Fn::Equals wants 2 values")
			}
			a, err := r.resolve(args[0])
			if err != nil {
				return false, err
			}
			b, err := r.resolve(args[1])
			if err != nil {
				return false, err
			}
			return canonical(a) == canonical(b), nil
		case "Fn::Not":
			if len(args) != 1 {
				return false, fmt.Errorf("Fn::Not wants 1 condition")
			}
			v, err := r.evalCondition(args[0])
			return !v, err
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, a := range args {
				v, err := r.evalCondition(a)
				if err != nil {
					return false, err
				}
				if v != and {
					return v, nil
				}
			}
			return and, nil
		}
		return false, fmt.Errorf("unknown condition function %s", fn)
	}
	return false, nil
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// resolve evaluates the intrinsic functions in v.
func (r *resolver) resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if strings.HasPrefix(fn, "Fn::") || fn == "Ref" {
					return r.intrinsic(fn, arg)
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			x, err := r.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if x != noValue {
				out[k] = x
			}
		}
		return out, nil
	case []any:
		out := []any{}
		for i, e := range v {
			x, err := r.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if x != noValue {
				out = append(out, x)
			}
		}
		return out, nil
	default:
		return scalar(v), nil
	}
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	args, _ := arg.([]any)
	switch fn {
	case "Ref":
		return r.ref(fmt.Sprint(arg), "")
	case "Fn::GetAtt":
		if s, ok := arg.(string); ok {
			id, att, _ := strings.Cut(s, ".")
			return r.ref(id, att)
		}
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt wants [id, attribute]")
		}
		return r.ref(fmt.Sprint(args[0]), fmt.Sprint(args[1]))
	case "Fn::If":
		if len(args) != 3 {
			return nil, fmt.Errorf("Fn::If wants [condition, then, else]")
		}
		on, err := r.condition(fmt.Sprint(args[0]))
		if err != nil {
			return nil, err
		}
		if on {
			return r.resolve(args[1])
		}
		return r.resolve(args[2])
	case "Fn::FindInMap":
		if len(args) != 3 {
			return nil, fmt.Errorf("Fn::FindInMap wants [map, key, key]")
		}
		var keys []string
		for _, a := range args {
			k, err := r.resolve(a)
			if err != nil {
				return nil, err
			}
			keys = append(keys, scalar(k))
		}
		v, ok := asMap(asMap(asMap(r.tpl["Mappings"])[keys[0]])[keys[1]])[keys[2]]
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap: no %s.%s.%s", keys[0], keys[1], keys[2])
		}
		return scalar(v), nil
	case "Fn::Join":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Join wants [delimiter, list]")
		}
		list, err := r.resolve(args[1])
		if err != nil {
			return nil, err
		}
		items, ok := list.([]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Join of %v", list)
		}
		var parts concat
		for i, it := range items {
			if i > 0 {
				parts = append(parts, fmt.Sprint(args[0]))
			}
			parts = append(parts, it)
		}
		return simplify(parts), nil
	case "Fn::Sub":
		text, vars := "", map[string]any{}
		if s, ok := arg.(string); ok {
			text = s
		} else if len(args) == 2 {
			text = fmt.Sprint(args[0])
			vars = asMap(args[1])
		} else {
			return nil, fmt.Errorf("Fn::Sub wants a string or [string, variables]")
		}
		var parts concat
		last := 0
		for _, m := range subVar.FindAllStringSubmatchIndex(text, -1) {
			parts = append(parts, text[last:m[0]])
			name := text[m[2]:m[3]]
			var v any
			var err error
			if e, ok := vars[name]; ok {
				v, err = r.resolve(e)
			} else if id, att, ok := strings.Cut(name, "."); ok {
				v, err = r.ref(id, att)
			} else {
				v, err = r.ref(name, "")
			}
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
			last = m[1]
		}
		parts = append(parts, text[last:])
		return simplify(parts), nil
	case "Fn::Split":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Split wants [delimiter, string]")
		}
		src, err := r.resolve(args[1])
		if err != nil {
			return nil, err
		}
		text, ok := src.(string)
		if !ok {
			return map[string]any{fn: []any{args[0], src}}, nil
		}
		var out []any
		for _, part := range strings.Split(text, fmt.Sprint(args[0])) {
			out = append(out, part)
		}
		return out, nil
	case "Fn::Select":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Select wants [index, list]")
		}
		list, err := r.resolve(args[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		var i int
		if _, err := fmt.Sscan(scalar(args[0]), &i); err != nil || i < 0 || i >= len(items) {
			return nil, fmt.Errorf("Fn::Select %v of %d items", args[0], len(items))
		}
		return items[i], nil
	}
	// Anything else stays as written, its arguments resolved.
	x, err := r.resolve(arg)
	if err != nil {
		return nil, err
	}
	return map[string]any{fn: x}, nil
}

func (r *resolver) ref(name, att string) (any, error) {
	if att == "" {
		if v, ok := r.params[name]; ok {
			return v, nil
		}
		if name == "AWS::NoValue" {
			return noValue, nil
		}
		if strings.HasPrefix(name, "AWS::") {
			if v, ok := pseudo[name]; ok {
				return v, nil
			}
			return "${" + name + "}", nil
		}
	}
	if _, ok := r.resources[name]; !ok {
		return nil, fmt.Errorf("reference to %s: no such parameter or resource", name)
	}
	return Ref{ID: name, Att: att}, nil
}

// simplify merges adjacent literal parts of a concat, flattens nested ones, and returns a
// plain string or a lone reference when that is all there is.
func simplify(parts concat) any {
	var out concat
	var add func(p any)
	add = func(p any) {
		switch p := p.(type) {
		case concat:
			for _, e := range p {
				add(e)
			}
		case string:
			if p == "" {
				return
			}
			if n := len(out); n > 0 {
				if s, ok := out[n-1].(string); ok {
					out[n-1] = s + p
					return
				}
			}
			out = append(out, p)
		default:
			out = append(out, p)
		}
	}
	for _, p := range parts {
		add(p)
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return out[0]
	}
	return out
}

// scalar is a scalar's string form: template numbers and booleans are written either way.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// canonical is a stable text form of a resolved value, references by id.
func canonical(v any) string {
	b, _ := json.Marshal(render(v, func(r Ref) string { return r.ID }))
	return string(b)
}
