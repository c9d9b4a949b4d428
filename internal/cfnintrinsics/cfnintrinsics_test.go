package cfnintrinsics_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/cfnintrinsics"
)

const doc = `{
  "Conditions": {
    "Prod": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
    "NotProd": {"Fn::Not": [{"Condition": "Prod"}]},
    "Both": {"Fn::And": [{"Condition": "Prod"}, {"Fn::Equals": [1, "1"]}]},
    "Either": {"Fn::Or": [{"Condition": "Prod"}, {"Condition": "NotProd"}]},
    "Loop": {"Fn::Not": [{"Condition": "Loop2"}]},
    "Loop2": {"Condition": "Loop"}
  },
  "Mappings": {"Size": {"prod": {"Memory": 512}, "dev": {"Memory": 128}}}
}`

// evaluator returns an evaluator of doc whose resources are "Queue" (Ref: its
// name, GetAtt: "<id>.<attr>").
func evaluator(t *testing.T) *cfnintrinsics.Evaluator {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	return &cfnintrinsics.Evaluator{
		Doc:    d,
		Params: map[string]any{"Env": "prod", "Subnets": []any{"a", "b"}},
		Pseudo: map[string]string{"AWS::Region": "eu-west-1", "AWS::StackId": "arn:x:stack/berth/id-1"},
		Ref: func(name string) (any, error) {
			if name == "Queue" {
				return "queue-name", nil
			}
			return nil, fmt.Errorf("no resource %s", name)
		},
		GetAtt: func(id, attr string) (any, error) {
			if id == "Queue" {
				return id + "." + attr, nil
			}
			return nil, fmt.Errorf("no resource %s", id)
		},
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestEval(t *testing.T) {
	cases := []struct {
		name, in string
		want     any
	}{
		{"literal", `{"A": 1, "B": [true, "x"]}`, map[string]any{"A": 1.0, "B": []any{true, "x"}}},
		{"ref parameter", `{"Ref": "Env"}`, "prod"},
		{"ref list parameter", `{"Ref": "Subnets"}`, []any{"a", "b"}},
		{"ref pseudo", `{"Ref": "AWS::Region"}`, "eu-west-1"},
		{"ref resource", `{"Ref": "Queue"}`, "queue-name"},
		{"getatt string", `{"Fn::GetAtt": "Queue.Arn"}`, "Queue.Arn"},
		{"getatt list", `{"Fn::GetAtt": ["Queue", {"Ref": "Env"}]}`, "Queue.prod"},
		{"novalue drops key and element", `{"A": {"Ref": "AWS::NoValue"}, "B": ["x", {"Ref": "AWS::NoValue"}]}`, map[string]any{"B": []any{"x"}}},
		{"if then", `{"Fn::If": ["Prod", "big", {"Ref": "Missing"}]}`, "big"},
		{"if else", `{"Fn::If": ["NotProd", {"Ref": "Missing"}, {"Ref": "AWS::NoValue"}]}`, cfnintrinsics.NoValue{}},
		{"findinmap", `{"Fn::FindInMap": ["Size", {"Ref": "Env"}, "Memory"]}`, 512.0},
		{"findinmap default", `{"Fn::FindInMap": ["Size", "test", "Memory", {"DefaultValue": 64}]}`, 64.0},
		{"join", `{"Fn::Join": ["-", ["a", {"Ref": "Env"}, 3]]}`, "a-prod-3"},
		{"sub", `{"Fn::Sub": "${AWS::Region}/${Queue}/${Queue.Arn}/${!Literal}"}`, "eu-west-1/queue-name/Queue.Arn/${Literal}"},
		{"sub variables", `{"Fn::Sub": ["${X}-${Env}", {"X": {"Ref": "Queue"}}]}`, "queue-name-prod"},
		{"split select", `{"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}`, "id-1"},
		{"select list parameter", `{"Fn::Select": ["1", {"Ref": "Subnets"}]}`, "b"},
		{"base64", `{"Fn::Base64": "hi"}`, "aGk="},
		{"getazs", `{"Fn::GetAZs": ""}`, []any{"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
		{"equals", `{"Fn::Equals": [{"Ref": "Env"}, "prod"]}`, true},
		{"condition", `{"Condition": "Both"}`, true},
		{"or", `{"Condition": "Either"}`, true},
		{"not", `{"Condition": "NotProd"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evaluator(t).Eval(decode(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"unknown resource", `{"A": {"Ref": "Missing"}}`, "A: no resource Missing"},
		{"unsupported function", `{"Fn::ImportValue": "x"}`, "Fn::ImportValue is not supported here"},
		{"if arity", `{"Fn::If": ["Prod", "x"]}`, "Fn::If wants [condition, then, else]"},
		{"no condition", `{"Fn::If": ["Nope", "x", "y"]}`, `no condition named "Nope"`},
		{"select out of range", `{"Fn::Select": [5, ["a"]]}`, "Fn::Select: index"},
		{"findinmap missing", `{"Fn::FindInMap": ["Size", "test", "Memory"]}`, "Fn::FindInMap: no"},
		{"sub unknown", `{"Fn::Sub": "${Missing}"}`, "Fn::Sub ${Missing}: no resource Missing"},
		{"and of a value", `{"Fn::And": ["x"]}`, "Fn::And: x is not a condition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluator(t).Eval(decode(t, tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestConditionCycle(t *testing.T) {
	_, err := evaluator(t).Condition("Loop")
	if !errors.Is(err, cfnintrinsics.ErrCycle) {
		t.Fatalf("got %v, want ErrCycle", err)
	}
}

// symbolic is a reference kept as written, as infra/cfnshape keeps them.
type symbolic struct{ id, attr string }

// TestHooks evaluates the way the parity test does: references stay
// symbolic, scalars become strings, unknown functions stay as written.
func TestHooks(t *testing.T) {
	e := evaluator(t)
	e.Ref = func(name string) (any, error) { return symbolic{id: name}, nil }
	e.GetAtt = func(id, attr string) (any, error) { return symbolic{id, attr}, nil }
	e.Concat = func(parts []any) any { return parts }
	e.Leaf = func(v any) any { return cfnintrinsics.Scalar(v) }
	e.Unknown = func(fn string, arg any) (any, error) { return map[string]any{fn: arg}, nil }
	cases := []struct {
		name, in string
		want     any
	}{
		{"leaf", `[1, true, null]`, []any{"1", "true", ""}},
		{"sub keeps references", `{"Fn::Sub": "arn:${Queue.Arn}:x"}`, []any{"arn:", symbolic{"Queue", "Arn"}, ":x"}},
		{"join keeps references", `{"Fn::Join": [",", [{"Ref": "Queue"}, "b"]]}`, []any{symbolic{id: "Queue"}, ",", "b"}},
		{"unknown stays", `{"Fn::ImportValue": {"Ref": "Env"}}`, map[string]any{"Fn::ImportValue": "prod"}},
		{"split of a reference stays", `{"Fn::Split": ["/", {"Ref": "Queue"}]}`, map[string]any{"Fn::Split": []any{"/", symbolic{id: "Queue"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Eval(decode(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}
