package runtime_test

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// stubRuntime answers Kind and Place; the resolver needs nothing else.
type stubRuntime struct {
	runtime.Runtime
	kind, node string
	placed     int
}

func (s *stubRuntime) Kind() string { return s.kind }

func (s *stubRuntime) Place(context.Context, container.Instance) (string, error) {
	s.placed++
	return s.node, nil
}

func TestResolver(t *testing.T) {
	dock := &stubRuntime{kind: container.RuntimeDocker, node: "host-a"}
	kube := &stubRuntime{kind: container.RuntimeKubernetes, node: "eks-1"}
	r, err := runtime.NewResolver(dock, kube)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kind string
		want runtime.Runtime
	}{
		{"docker", "docker", dock},
		{"kubernetes", "kubernetes", kube},
		{"empty means docker", "", dock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ForTemplate(container.Template{Runtime: tt.kind})
			if err != nil || got != tt.want {
				t.Errorf("ForTemplate(%q) = %v, %v", tt.kind, got, err)
			}
		})
	}
	if _, err := r.Kind("nomad"); !runtime.IsInvalid(err) {
		t.Errorf("unknown kind: err = %v, want invalid", err)
	}
	if _, err := runtime.NewResolver(dock, dock); err == nil {
		t.Error("two runtimes of one kind were accepted")
	}

	// Place keeps a recorded node and asks the runtime only when there is none.
	inst := container.Instance{ID: "i1", Spec: container.Spec{Runtime: "kubernetes"}}
	rt, node, err := r.Place(context.Background(), inst)
	if err != nil || rt != kube || node != "eks-1" || kube.placed != 1 {
		t.Errorf("Place(new) = %v, %q, %v (placed %d)", rt, node, err, kube.placed)
	}
	inst.RuntimeNodeName = "eks-2"
	if _, node, _ := r.Place(context.Background(), inst); node != "eks-2" || kube.placed != 1 {
		t.Errorf("Place(recorded) = %q, placed %d; want the recorded node, no new placement", node, kube.placed)
	}
	// The instance's recorded kind stands in for a spec without one.
	if rt, _ := r.ForInstance(container.Instance{Runtime: "kubernetes"}); rt != kube {
		t.Errorf("ForInstance(recorded kind) = %v", rt)
	}
}
