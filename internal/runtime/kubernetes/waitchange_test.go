package kubernetes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/testenv"
)

// TestWaitChange: the stabilisation wait answers when the Pod's reported
// state differs from the one the caller last saw (at once, when it already
// does: the watch opens with the Pod as it is), and waits through
// everything else.
func TestWaitChange(t *testing.T) {
	t.Parallel()
	k := newKube(t, kubernetes.Options{})
	ctx := testenv.Context(t, 60*time.Second)
	inst := k.instance()
	ref, err := k.Create(ctx, inst)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// From a Pending Pod to a Running one: WaitChange answers, and the
	// Pod it answered for is past the state the caller reported.
	for {
		st, err := k.Inspect(ctx, ref)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		if st.Phase == runtime.PhaseRunning {
			break
		}
		if err := k.WaitChange(ctx, ref, st); err != nil {
			t.Fatalf("wait change from %s: %v", st.Phase, err)
		}
		if again, err := k.Inspect(ctx, ref); err != nil || (again.Phase == st.Phase && again.Error == st.Error) {
			t.Fatalf("wait change answered but the state is still %+v (%v)", again, err)
		}
	}
	running, err := k.Inspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Reported as it is: nothing to answer until the bound.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := k.WaitChange(short, ref, running); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait change on an unchanged Pod: %v, want the bound to pass", err)
	}
	// Last seen pending, now running: at once.
	if err := k.WaitChange(testenv.Context(t, 5*time.Second), ref, runtime.State{Phase: runtime.PhaseCreated}); err != nil {
		t.Fatalf("wait change from a state the Pod has left: %v", err)
	}
}
