package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/secrets"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
	"github.com/berth-io/berth/internal/worker"
)

// flakySource is a real secret source behind injected outages: its first
// failures calls fail as an unreachable Parameter Store would.
type flakySource struct {
	worker.SecretSource
	failures atomic.Int32
	calls    atomic.Int32
}

func (f *flakySource) Secret(ctx context.Context, name string) (string, error) {
	f.calls.Add(1)
	if f.failures.Add(-1) >= 0 {
		return "", errors.New("injected: secret store unreachable")
	}
	return f.SecretSource.Secret(ctx, name)
}

// TestSecretEnvReachesContainer: a secret named by the template's
// secret_env is in the container's environment (the engine's own inspect
// says so), survives an outage of its source by retrying, and appears in no
// instance record, event or log line. An unknown secret fails the create
// at once, naming the secret.
func TestSecretEnvReachesContainer(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Parallel()
		r := newRig(t, b, 0)
		value := "s3cr3t-" + strings.ToLower(container.NewID())
		file := filepath.Join(t.TempDir(), "secrets.yml")
		if err := os.WriteFile(file, []byte("api-key: "+value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		src := &flakySource{SecretSource: secrets.File{Path: file}}
		src.failures.Store(2)
		var logs testenv.SyncBuffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		res, err := runtime.NewResolver(r.rt)
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(worker.Options{Manager: r.m, Store: r.store, Runtimes: res, Logger: logger, Secrets: src,
			MaxAttempts: 5, StopGrace: time.Second, StablePoll: 20 * time.Millisecond, CreateStartTimeout: 30 * time.Second,
			Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
		admin := identity.Caller{User: "root", Admin: true}
		for name, ref := range map[string]string{"secretive": "api-key", "missing": "no-such-secret"} {
			if _, _, err := r.m.PutTemplate(context.Background(), admin, container.Template{Name: name, Runtime: "docker",
				Image: testenv.TestImage(t), PullPolicy: container.PullNever, Command: []string{"sleep", "3600"},
				Env: map[string]string{"PLAIN": "1"}, SecretEnv: map[string]string{"API_KEY": ref}}); err != nil {
				t.Fatal(err)
			}
		}

		in := r.create("secretive")
		it := r.item(in.ID, container.OpCreate)
		for attempt := 1; ; attempt++ {
			res := w.Process(context.Background(), delivery(t, it, attempt))
			if res.Reason == "done" {
				break
			}
			if !strings.HasPrefix(res.Reason, "retry") || attempt > 3 {
				t.Fatalf("attempt %d: %+v", attempt, res)
			}
		}
		if src.calls.Load() != 3 {
			t.Fatalf("secret asked %d times, want 3 (two outages, then the value)", src.calls.Load())
		}
		got := r.get(in.ID)
		if got.Status != fsm.Running {
			t.Fatalf("status %s (%s)", got.Status, got.StatusReason)
		}
		insp, err := r.engine.Client(got.RuntimeNodeName).ContainerInspect(context.Background(), runtime.ObjectName(in.ID), client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if env := insp.Container.Config.Env; !slices.Contains(env, "API_KEY="+value) || !slices.Contains(env, "PLAIN=1") {
			t.Fatalf("container env lacks the secret: %q", env)
		}

		record, _ := json.Marshal(got)
		spec, _ := json.Marshal(got.Spec)
		evs, err := r.store.ListEvents(context.Background(), in.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		events, _ := json.Marshal(evs.Items)
		for what, text := range map[string]string{"instance": string(record), "spec": string(spec), "events": string(events), "logs": logs.String()} {
			if strings.Contains(text, value) {
				t.Errorf("the secret's value is in the %s: %s", what, text)
			}
		}
		if !strings.Contains(string(spec), `"API_KEY":"api-key"`) {
			t.Errorf("the spec does not record which secret it needs: %s", spec)
		}

		bad := r.create("missing")
		res1 := w.Process(context.Background(), delivery(t, r.item(bad.ID, container.OpCreate), 1))
		failed := r.get(bad.ID)
		if !strings.HasPrefix(res1.Reason, "failed") || failed.Status != fsm.Failed || !strings.Contains(failed.StatusReason, "no-such-secret") {
			t.Fatalf("unknown secret: %+v, instance %s (%s)", res1, failed.Status, failed.StatusReason)
		}
	})
}
