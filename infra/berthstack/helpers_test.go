package berthstack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// functionBinaries are the directories under dist/ the stack takes code from.
var functionBinaries = []string{"api", "dispatcher", "logs", "notify", "reconciler", "watcher", "worker"}

// fakeDist is a dist/ with a bootstrap for every function: synth only packs it.
func fakeDist(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range functionBinaries {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\n# "+fn+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jsiiDo runs f and turns a panic from the jsii kernel (how a failed assertion or a CDK error
// surfaces) into a test failure, so one failing check does not kill the test binary.
func jsiiDo(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: %v", what, r)
		}
	}()
	f()
}

// synthesized is a stack and its template, as JSON and for assertions.
type synthesized struct {
	stack    *Stack
	assert   assertions.Template
	template map[string]any
}

// synth builds the stack for p (DistDir set to a fake dist/ when empty) and synthesizes it.
func synth(t *testing.T, p Props) *synthesized {
	t.Helper()
	if p.DistDir == DefaultDistDir || p.DistDir == "" {
		p.DistDir = fakeDist(t)
	}
	var s synthesized
	jsiiDo(t, "synth", func() {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		stack, err := New(app, "berth", nil, p)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		s.stack = stack
		s.assert = assertions.Template_FromStack(stack.Stack, nil)
		s.template = *s.assert.ToJSON()
	})
	return &s
}

// logicalID is the template id of a construct's CloudFormation resource.
func (s *synthesized) logicalID(t *testing.T, c constructs.IConstruct) string {
	t.Helper()
	var id string
	jsiiDo(t, "logical id", func() {
		el, ok := c.(awscdk.CfnElement)
		if !ok {
			el = c.Node().DefaultChild().(awscdk.CfnElement)
		}
		id = *s.stack.GetLogicalId(el)
	})
	return id
}

// resource returns the template's resource by logical id.
func (s *synthesized) resource(t *testing.T, id string) map[string]any {
	t.Helper()
	r, ok := s.template["Resources"].(map[string]any)[id].(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	return r
}

// props returns a resource's Properties.
func (s *synthesized) props(t *testing.T, id string) map[string]any {
	t.Helper()
	p, _ := s.resource(t, id)["Properties"].(map[string]any)
	return p
}

// ofType returns the logical ids and properties of every resource of a type.
func (s *synthesized) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.template["Resources"].(map[string]any) {
		rm := r.(map[string]any)
		if rm["Type"] == typ {
			p, _ := rm["Properties"].(map[string]any)
			out[id] = p
		}
	}
	return out
}

// has asserts that some resource of typ has props (assertions.Match semantics: objects
// partially, arrays exactly).
func (s *synthesized) has(t *testing.T, typ string, props map[string]any) {
	t.Helper()
	jsiiDo(t, fmt.Sprintf("%s with %v", typ, props), func() {
		s.assert.HasResourceProperties(jsii.String(typ), props)
	})
}

func ref(id string) map[string]any         { return map[string]any{"Ref": id} }
func getAtt(id, att string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, att}} }

func awscdkApp(t *testing.T) awscdk.App {
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
}
