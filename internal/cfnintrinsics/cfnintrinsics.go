// Package cfnintrinsics evaluates CloudFormation's intrinsic functions
// (Ref, Fn::GetAtt, Fn::If, Fn::FindInMap, Fn::Join, Fn::Sub, Fn::Split,
// Fn::Select, Fn::Base64, Fn::GetAZs) and condition functions (Condition,
// Fn::Equals, Fn::Not, Fn::And, Fn::Or) in a template decoded from JSON.
//
// It is the one evaluator of the project: the emulator (internal/samtemplate)
// resolves every reference to a value it runs, the parity test of the CDK app
// (infra/cfnshape) keeps references to resources symbolic. What differs
// between them is given as hooks (Ref, GetAtt, Concat, Leaf, Equal, Unknown);
// the rules of each function are written here only.
package cfnintrinsics

import (
	"errors"
	"fmt"
)

// NoValue is what AWS::NoValue evaluates to: the key or list element that
// holds it is dropped, as CloudFormation does.
type NoValue struct{}

// ErrCycle is returned for a condition that refers to itself.
var ErrCycle = errors.New("condition refers to itself")

// Evaluator resolves intrinsic functions in Doc. Set the fields before the
// first call and do not change them after; an Evaluator caches conditions and
// is not safe for concurrent use.
type Evaluator struct {
	// Doc is the decoded template: its Conditions and Mappings are read.
	Doc map[string]any
	// Params are the effective parameter values (strings, or lists for
	// list-typed parameters).
	Params map[string]any
	// Pseudo are the pseudo parameters with a value (AWS::Region, …).
	Pseudo map[string]string
	// Ref resolves a Ref that is neither AWS::NoValue, a pseudo parameter in
	// Pseudo nor a parameter: a resource, or a pseudo parameter without a
	// value. Required.
	Ref func(name string) (any, error)
	// GetAtt resolves Fn::GetAtt and "${Resource.Attribute}" in Fn::Sub.
	// Required.
	GetAtt func(logicalID, attr string) (any, error)
	// Concat builds Fn::Join's and Fn::Sub's result from its parts (literal
	// strings and resolved values, in order). Defaults to joining each
	// part's Scalar form into one string.
	Concat func(parts []any) any
	// Leaf maps a literal scalar of the template (string, number, boolean,
	// null). Defaults to keeping it as decoded.
	Leaf func(v any) any
	// Equal is Fn::Equals on two resolved values. Defaults to comparing
	// their Scalar forms.
	Equal func(a, b any) bool
	// Unknown evaluates a function this package does not resolve (or a
	// Fn::Split, Fn::Base64 of a value that is not a string), given its
	// evaluated argument. Defaults to an error.
	Unknown func(fn string, arg any) (any, error)

	conditions map[string]bool
	evaluating map[string]bool // conditions being evaluated (cycle check)
}

// Condition evaluates the template's condition name, once.
func (e *Evaluator) Condition(name string) (bool, error) {
	if e.conditions == nil {
		e.conditions, e.evaluating = map[string]bool{}, map[string]bool{}
	}
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	if e.evaluating[name] {
		return false, fmt.Errorf("condition %s: %w", name, ErrCycle)
	}
	conds, _ := e.Doc["Conditions"].(map[string]any)
	raw, ok := conds[name]
	if !ok {
		return false, fmt.Errorf("no condition named %q", name)
	}
	e.evaluating[name] = true
	v, err := e.Eval(raw)
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

// Eval returns v with every intrinsic function resolved.
func (e *Evaluator) Eval(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if isFunction(k) {
					return e.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, item := range x {
			r, err := e.Eval(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, drop := r.(NoValue); !drop {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, item := range x {
			r, err := e.Eval(item)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if _, drop := r.(NoValue); !drop {
				out = append(out, r)
			}
		}
		return out, nil
	}
	if e.Leaf != nil {
		return e.Leaf(v), nil
	}
	return v, nil
}

// isFunction reports whether a map's only key names a function.
func isFunction(k string) bool {
	return k == "Ref" || k == "Condition" || len(k) > 4 && k[:4] == "Fn::"
}

// RefName resolves a Ref: AWS::NoValue, a pseudo parameter, a parameter, or
// whatever Ref resolves.
func (e *Evaluator) RefName(name string) (any, error) {
	if name == "AWS::NoValue" {
		return NoValue{}, nil
	}
	if v, ok := e.Pseudo[name]; ok {
		return v, nil
	}
	if v, ok := e.Params[name]; ok {
		return v, nil
	}
	return e.Ref(name)
}

func (e *Evaluator) concat(parts []any) any {
	if e.Concat != nil {
		return e.Concat(parts)
	}
	s := ""
	for _, p := range parts {
		s += Scalar(p)
	}
	return s
}

func (e *Evaluator) unknown(fn string, arg any) (any, error) {
	if e.Unknown != nil {
		return e.Unknown(fn, arg)
	}
	return nil, fmt.Errorf("%s is not supported here", fn)
}
