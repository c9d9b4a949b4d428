package docker_test

import (
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// TestBadSpecIsInvalid: specs the engine refuses with a 500 (API 1.41)
// come back as ErrInvalid, so the worker fails the instance at once with
// the engine's reason instead of retrying it as an outage.
func TestBadSpecIsInvalid(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 60*time.Second)

	t.Run("workdir is a file: refused at create", func(t *testing.T) {
		inst := e.instance("true")
		inst.Spec.Workdir = "/bin/sh"
		_, err := e.Create(ctx, inst)
		if !runtime.IsInvalid(err) {
			t.Fatalf("create: err = %v, want invalid", err)
		}
		noSecret(t, err)
	})
	t.Run("command not in the image: refused at start", func(t *testing.T) {
		inst := e.instance("true")
		inst.Spec.Command = []string{"/no/such/program"}
		ref, err := e.Create(ctx, inst)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		err = e.Start(ctx, ref)
		if !runtime.IsInvalid(err) {
			t.Fatalf("start: err = %v, want invalid", err)
		}
		noSecret(t, err)
	})
}
