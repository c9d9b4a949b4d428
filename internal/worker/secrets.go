package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/secrets"
)

// SecretSource gives the value of a secret a template's secret_env names.
// The worker asks only as it makes a container, and puts the value only in
// that container's environment: never in the instance, an event or a log.
// An unknown name is an error wrapping secrets.ErrNotFound (the create
// fails for good); any other error is retried as the source being
// unavailable. Errors must name the secret, never a value.
type SecretSource interface {
	Secret(ctx context.Context, name string) (string, error)
}

var _ SecretSource = secrets.Source(nil)

// errNoSecretSource is a template with secret_env on a worker configured
// with no source (secrets.source: none).
var errNoSecretSource = errors.New("no secret source is configured (secrets.source)")

// withSecrets returns inst with its spec's secret_env resolved into the
// environment it is created with. The copy is for the runtime only: it is
// never written back. A failed lookup is logged whole (the source says
// where it looked) and returned as secrets.Public words it, since what it
// returns may become the instance's status_reason, which its owner reads.
func (w *Worker) withSecrets(ctx context.Context, log *slog.Logger, inst container.Instance) (container.Instance, error) {
	if len(inst.Spec.SecretEnv) == 0 {
		return inst, nil
	}
	if w.secrets == nil {
		return inst, fmt.Errorf("template %q has secret_env: %w: %w", inst.Template, errNoSecretSource, errPermanent)
	}
	out := inst.Clone()
	if out.Spec.Env == nil {
		out.Spec.Env = make(map[string]string, len(inst.Spec.SecretEnv))
	}
	for _, k := range slices.Sorted(maps.Keys(inst.Spec.SecretEnv)) {
		name := inst.Spec.SecretEnv[k]
		v, err := w.secrets.Secret(ctx, name)
		if err != nil {
			log.WarnContext(ctx, "secret lookup failed", "variable", k, "secret", name, "error", err)
			err = secrets.Public(name, err)
		}
		if errors.Is(err, secrets.ErrNotFound) {
			return inst, fmt.Errorf("secret_env.%s: %w: %w", k, err, errPermanent)
		}
		if err != nil {
			return inst, fmt.Errorf("secret_env.%s: %w", k, err)
		}
		out.Spec.Env[k] = v
	}
	return out, nil
}
