// Package cfnshape compares two CloudFormation templates resource for resource, ignoring
// logical ids: the shapes of berth's stack written as template.yaml (after the SAM transform)
// and as the CDK app must be the same.
//
// Resolve evaluates a template for one set of parameter values with the project's one
// evaluator of intrinsics, internal/cfnintrinsics (conditions, Fn::If,
// Fn::FindInMap, Fn::Sub, Fn::Join, parameter references) and rewrites what the two tools
// spell differently but means the same (see normalize.go); Compare pairs the resources and
// reports every difference as a readable line.
package cfnshape

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-io/berth/internal/cfnintrinsics"
)

// Ref is a reference to another resource of the same template: Ref (Att empty) or
// Fn::GetAtt.
type Ref struct {
	ID  string
	Att string
}

// concat is a string built from literal parts and references (Fn::Sub, Fn::Join).
type concat []any

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

// resolver holds what the evaluator's hooks read: the template's resources.
type resolver struct {
	resources map[string]any
}

// Resolve evaluates tpl (a decoded JSON template) with the given parameter values; a parameter
// not given takes its default.
func Resolve(tpl map[string]any, values map[string]string) (*Resolved, error) {
	r := &resolver{resources: asMap(tpl["Resources"])}
	ev := &cfnintrinsics.Evaluator{
		Doc: tpl, Params: map[string]any{}, Pseudo: pseudo,
		Ref:    func(name string) (any, error) { return r.ref(name, "") },
		GetAtt: r.ref,
		Concat: func(parts []any) any { return simplify(concat(parts)) },
		Leaf:   func(v any) any { return scalar(v) },
		Equal:  func(a, b any) bool { return canonical(a) == canonical(b) },
		// Anything else stays as written, its arguments resolved.
		Unknown: func(fn string, arg any) (any, error) { return map[string]any{fn: arg}, nil },
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
			ev.Params[name] = list
		} else {
			ev.Params[name] = v
		}
	}
	for name := range values {
		if _, ok := ev.Params[name]; !ok {
			return nil, fmt.Errorf("parameter %s: not in the template", name)
		}
	}
	out := &Resolved{Resources: map[string]*Resource{}}
	for id, raw := range r.resources {
		res := asMap(raw)
		if c, ok := res["Condition"].(string); ok {
			on, err := ev.Condition(c)
			if err != nil {
				return nil, fmt.Errorf("resource %s: %w", id, err)
			}
			if !on {
				continue
			}
		}
		body := map[string]any{}
		if props, ok := res["Properties"]; ok {
			v, err := ev.Eval(props)
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
			on, err := ev.Condition(c)
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

// ref is a reference the evaluator leaves to the template: a resource's (kept
// symbolic), or a pseudo parameter without a value (kept as "${AWS::Region}").
func (r *resolver) ref(name, att string) (any, error) {
	if att == "" && strings.HasPrefix(name, "AWS::") {
		return "${" + name + "}", nil
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
func scalar(v any) string { return cfnintrinsics.Scalar(v) }

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// canonical is a stable text form of a resolved value, references by id.
func canonical(v any) string {
	b, _ := json.Marshal(render(v, func(r Ref) string { return r.ID }))
	return string(b)
}
