package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/berth-io/berth/internal/runtime"
)

// TestClassify: what an engine says about a spec it can never run is
// invalid (not retried), even when API 1.41 sends it as a 500; a 500 about
// the engine, and a connection failure whatever its text, stay unavailable.
func TestClassify(t *testing.T) {
	server := func(msg string) error {
		return fmt.Errorf("Error response from daemon: %s: %w", msg, cerrdefs.ErrInternal)
	}
	cases := []struct {
		name string
		op   string
		err  error
		want error
	}{
		{"target /", "create", server(`invalid volume specification: '/tmp:/': invalid mount config for type "bind": invalid specification: destination can't be '/'`), runtime.ErrInvalid},
		{"workdir is a file", "create", server("Cannot mkdir: /bin/sh is not a directory"), runtime.ErrInvalid},
		{"NUL in a path", "create", server("lstat /var/lib/docker/vfs/dir/x/a\x00b: invalid argument"), runtime.ErrInvalid},
		{"command missing", "start", server(`failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/nonexistent": stat /nonexistent: no such file or directory: unknown`), runtime.ErrInvalid},
		{"engine trouble on create", "create", server("devmapper: Thin Pool has 0 free data blocks"), runtime.ErrUnavailable},
		{"bad-spec text on a stop", "stop", server("invalid argument"), runtime.ErrUnavailable},
		{"socket missing", "create", &net.OpError{Op: "dial", Net: "unix", Err: errors.New("connect: no such file or directory")}, runtime.ErrUnavailable},
		{"400", "create", fmt.Errorf("bad: %w", cerrdefs.ErrInvalidArgument), runtime.ErrInvalid},
		{"404", "start", fmt.Errorf("gone: %w", cerrdefs.ErrNotFound), runtime.ErrNotFound},
		{"cancelled", "create", context.Canceled, runtime.ErrUnavailable},
	}
	for _, c := range cases {
		err := classify(c.err, c.op, "01TEST", "h1")
		var re *runtime.Error
		if !errors.As(err, &re) || !errors.Is(re.Kind, c.want) {
			t.Errorf("%s: classify = %v, want kind %v", c.name, err, c.want)
		}
	}
}
