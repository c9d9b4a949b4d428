// Package dockertest gives tests a Docker runtime on the real engine that
// `make test` starts (internal/testenv), in a scope of their own: the test
// sees, counts and reconciles only its own containers, even while other
// packages' tests use the same engine, and every container of the scope is
// removed when the test ends.
package dockertest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/testenv"
)

// Engine returns a runtime over one host named "local" on the test engine
// (network none), in a new scope. A missing engine skips the test locally
// and fails it in CI.
func Engine(t testing.TB) *docker.Runtime {
	t.Helper()
	return Hosts(t, config.DockerHost{Name: "local", Endpoint: testenv.DockerHost(t), NetworkMode: "none"})
}

// Hosts is Engine over the given hosts.
func Hosts(t testing.TB, hosts ...config.DockerHost) *docker.Runtime {
	t.Helper()
	scope := "t-" + strings.ToLower(container.NewID())
	rt, err := docker.New(config.Docker{Scope: scope, Hosts: hosts},
		docker.Options{Scope: scope, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		rt.Close()
		testenv.Missing(t, "a Docker engine", err.Error())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		states, err := rt.List(ctx)
		if err != nil {
			t.Errorf("dockertest cleanup: %v", err)
		}
		for _, st := range states {
			if err := rt.Delete(ctx, st.Ref); err != nil {
				t.Errorf("dockertest cleanup: delete %s: %v", st.Name, err)
			}
		}
		rt.Close()
	})
	return rt
}
