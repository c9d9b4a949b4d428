package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestBadSpecFailsAtOnce: a spec the engine can never run (here a workdir
// that is a file in the image, which an API 1.41 engine reports as a 500)
// fails the instance on the first attempt with the engine's reason,
// instead of being retried as an outage.
func TestBadSpecFailsAtOnce(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 1)
		ctx := context.Background()
		if _, _, err := r.m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{
			Name: "workdir-file", Runtime: container.RuntimeDocker, Image: testenv.TestImage(t),
			PullPolicy: container.PullNever, Command: []string{"true"}, Workdir: "/bin/sh",
		}); err != nil {
			t.Fatal(err)
		}
		inst := r.create("workdir-file")
		got := r.run(inst.ID, container.OpCreate)
		if !got.Ack || !strings.HasPrefix(got.Reason, "failed") {
			t.Fatalf("first attempt: %+v, want failed at once", got)
		}
		in := r.get(inst.ID)
		if in.Status != fsm.Failed || !strings.Contains(in.StatusReason, "invalid") ||
			!strings.Contains(in.StatusReason, "/bin/sh is not a directory") {
			t.Errorf("instance: %s, %q; want failed, saying the spec is invalid and why", in.Status, in.StatusReason)
		}
		if strings.Contains(in.StatusReason, "outside berth") {
			t.Errorf("reason blames someone else: %q", in.StatusReason)
		}
	})
}
