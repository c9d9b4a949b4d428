package berthstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// functionBinaries are the directories under dist/ the stack takes code from.
var functionBinaries = []string{"api", "dispatcher", "exec", "logs", "notify", "reconciler", "watcher", "worker"}

// fakeDist is a dist/ under parent with a bootstrap for every function: synth only packs it.
func fakeDist(t *testing.T, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "dist")
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
// A synthesis takes seconds of the jsii kernel's time, and most tests read the same few
// stacks (the defaults, the parity cases, which TestCfnLint lints too): those with the fake
// dist/ are synthesized once per test binary, keyed by their props, and each caller gets its
// own copy of the template (cfnshape.Normalize edits what it is given) beside the shared,
// read-only stack and assertions.
func synth(t *testing.T, p Props) *synthesized {
	t.Helper()
	if p.DistDir != DefaultDistDir && p.DistDir != "" {
		return synthIn(t, p, t.TempDir())
	}
	key, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("props as a key: %v", err)
	}
	synths.mu.Lock()
	defer synths.mu.Unlock()
	s, ok := synths.done[string(key)]
	if !ok {
		dir, err := os.MkdirTemp(synthsDir(t), "synth-")
		if err != nil {
			t.Fatal(err)
		}
		s = synthIn(t, p, dir)
		synths.done[string(key)] = s
	}
	return s.copy(t)
}

// synths are the stacks synth shared, by their props as JSON; their files (the fake dist/
// and the app's output) stay under synths.dir until TestMain removes it.
var synths = struct {
	mu   sync.Mutex
	dir  string
	done map[string]*synthesized
}{done: map[string]*synthesized{}}

// synthsDir makes synths.dir the first time; synths.mu is held.
func synthsDir(t *testing.T) string {
	if synths.dir == "" {
		dir, err := os.MkdirTemp("", "berthstack-synths-")
		if err != nil {
			t.Fatal(err)
		}
		synths.dir = dir
	}
	return synths.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if synths.dir != "" {
		_ = os.RemoveAll(synths.dir)
	}
	os.Exit(code)
}

// synthIn synthesizes the stack for p with the app's output under dir.
func synthIn(t *testing.T, p Props, dir string) *synthesized {
	t.Helper()
	if p.DistDir == DefaultDistDir || p.DistDir == "" {
		p.DistDir = fakeDist(t, dir)
	}
	var s synthesized
	jsiiDo(t, "synth", func() {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out"))})
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

// copy is s with a template of its own.
func (s *synthesized) copy(t *testing.T) *synthesized {
	t.Helper()
	b, err := json.Marshal(s.template)
	if err != nil {
		t.Fatal(err)
	}
	c := *s
	c.template = nil
	if err := json.Unmarshal(b, &c.template); err != nil {
		t.Fatal(err)
	}
	return &c
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
