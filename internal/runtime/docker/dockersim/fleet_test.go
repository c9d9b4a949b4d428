package dockersim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/testenv"
)

// newFleet starts a fleet and a docker.Runtime over all its hosts.
func newFleet(t *testing.T, opts dockersim.Options) (*dockersim.Fleet, *docker.Runtime) {
	t.Helper()
	f, err := dockersim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	rt, err := docker.New(config.Docker{Hosts: f.DockerHosts(config.DockerHost{NetworkMode: "none"})}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return f, rt
}

// instance is an instance of an image every host has; it runs for runFor
// (0: until stopped) and exits with code.
func instance(runFor time.Duration, code string) container.Instance {
	env := map[string]string{dockersim.EnvExitCode: code}
	if runFor > 0 {
		env[dockersim.EnvRunFor] = runFor.String()
	}
	return container.Instance{ID: container.NewID(), Owner: "alice", Template: "sim",
		Spec: container.Spec{Runtime: container.RuntimeDocker, Image: "sim/app:1", PullPolicy: container.PullNever, Env: env}}
}

// failedOn is the hosts a joined error names.
func failedOn(err error) []string {
	var out []string
	for _, e := range unwrapAll(err) {
		var re *runtime.Error
		if errors.As(e, &re) {
			out = append(out, re.Node)
		}
	}
	return out
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestFaults: each fault does what it says, on the host it is set on only,
// and a host's own faults win over the fleet's.
func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		faults dockersim.Faults
		// check gets the ping of the whole fleet, how long it took, and the
		// calls the faulty host received.
		check func(t *testing.T, err error, took time.Duration, calls int64)
	}{
		{"healthy", dockersim.Faults{}, func(t *testing.T, err error, _ time.Duration, calls int64) {
			if err != nil || calls == 0 {
				t.Errorf("ping: %v after %d calls", err, calls)
			}
		}},
		{"latency", dockersim.Faults{Latency: 300 * time.Millisecond}, func(t *testing.T, err error, took time.Duration, _ int64) {
			if err != nil || took < 300*time.Millisecond {
				t.Errorf("ping of a host with 300 ms latency: %v in %s", err, took)
			}
		}},
		{"hang", dockersim.Faults{Hang: true}, func(t *testing.T, err error, took time.Duration, calls int64) {
			if !runtime.IsUnavailable(err) || calls == 0 || took < time.Second {
				t.Errorf("ping of a hanging host: %v in %s after %d calls; want unavailable at the 1 s deadline, the call received", err, took, calls)
			}
		}},
		{"down", dockersim.Faults{Down: true}, func(t *testing.T, err error, took time.Duration, calls int64) {
			if !runtime.IsUnavailable(err) || calls != 0 || took >= time.Second {
				t.Errorf("ping of a host that is down: %v in %s after %d calls; want refused at once", err, took, calls)
			}
		}},
		{"errors", dockersim.Faults{ErrorRate: 1}, func(t *testing.T, err error, _ time.Duration, calls int64) {
			if !runtime.IsUnavailable(err) || calls == 0 || !strings.Contains(err.Error(), "simulated engine error") {
				t.Errorf("ping of a host failing every call: %v after %d calls", err, calls)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The fleet's faults are the opposite of healthy; host 1 has
			// its own.
			f, rt := newFleet(t, dockersim.Options{Hosts: 3, Faults: dockersim.Faults{Latency: 10 * time.Millisecond}})
			bad := f.Hosts()[1]
			if err := bad.SetFaults(&c.faults); err != nil {
				t.Fatal(err)
			}
			// Started before the deadline is set, so a call that waits for
			// it takes at least its second.
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := rt.Ping(ctx)
			took := time.Since(start)
			if err != nil {
				if got := failedOn(err); len(got) != 1 || got[0] != bad.Name() {
					t.Errorf("the error names hosts %v, want only %s: %v", got, bad.Name(), err)
				}
			}
			c.check(t, err, took, bad.Calls())
			// Back to the fleet's faults: the host answers again (a host
			// that was down listens on its port again).
			if err := bad.SetFaults(nil); err != nil {
				t.Fatal(err)
			}
			if err := rt.Ping(testenv.Context(t, 10*time.Second)); err != nil {
				t.Errorf("ping once the faults are cleared: %v", err)
			}
		})
	}
}

// TestFleetFaults: the fleet's faults reach every host without its own,
// and clearing them brings the fleet back.
func TestFleetFaults(t *testing.T) {
	t.Parallel()
	f, rt := newFleet(t, dockersim.Options{Hosts: 4})
	if err := f.Hosts()[2].SetFaults(&dockersim.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetFaults(dockersim.Faults{Down: true}); err != nil {
		t.Fatal(err)
	}
	err := rt.Ping(testenv.Context(t, 10*time.Second))
	if got := failedOn(err); len(got) != 3 || strings.Contains(strings.Join(got, ","), f.Hosts()[2].Name()) {
		t.Errorf("with the fleet down but %s healthy of its own, ping failed on %v: %v", f.Hosts()[2].Name(), got, err)
	}
	if err := f.SetFaults(dockersim.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Ping(testenv.Context(t, 10*time.Second)); err != nil {
		t.Errorf("ping with the fleet up again: %v", err)
	}
}

// TestErrorRate: about the configured fraction of calls fails.
func TestErrorRate(t *testing.T) {
	t.Parallel()
	_, rt := newFleet(t, dockersim.Options{Hosts: 1, Faults: dockersim.Faults{ErrorRate: 0.5}})
	ctx := testenv.Context(t, 30*time.Second)
	failed := 0
	const calls = 400
	for range calls {
		if _, err := rt.Inspect(ctx, runtime.Ref{InstanceID: container.NewID(), Node: "sim-0000"}); runtime.IsUnavailable(err) {
			failed++
		} else if !runtime.IsNotFound(err) {
			t.Fatalf("inspect of a missing container: %v", err)
		}
	}
	// Binomial(400, 0.5): 200 ± 25 is five standard deviations.
	if failed < 175 || failed > 225 {
		t.Errorf("%d of %d calls failed at an error rate of 0.5", failed, calls)
	}
}

// TestThousandHosts: one process serves a thousand hosts, each on its own
// port, and a runtime over all of them reaches every one.
func TestThousandHosts(t *testing.T) {
	t.Parallel()
	f, rt := newFleet(t, dockersim.Options{Hosts: 1000, Images: []string{"sim/app:1"}})
	ctx := testenv.Context(t, 60*time.Second)
	if err := rt.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	seen := map[string]bool{}
	for _, hc := range f.DockerHosts(config.DockerHost{}) {
		if seen[hc.Endpoint] {
			t.Fatalf("two hosts at %s", hc.Endpoint)
		}
		seen[hc.Endpoint] = true
	}
	inst := instance(0, "0")
	inst.RuntimeNodeName = f.Hosts()[999].Name()
	if _, err := rt.Create(ctx, inst); err != nil {
		t.Fatalf("create on the last host: %v", err)
	}
	all, err := rt.List(ctx)
	if err != nil || len(all) != 1 || all[0].Node != f.Hosts()[999].Name() {
		t.Errorf("list over 1,000 hosts: %+v, %v", all, err)
	}
}
