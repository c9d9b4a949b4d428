package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/store"
)

// Generation identifies the deployment a function runs in: a digest of its
// code (the running executable's bytes) and of its deployed configuration
// (every BERTH_* variable of environ, which template.yaml and the CDK stack
// set, including the configuration parameter's name:version). Lambda
// replaces a function's code and environment only by a deployment, and
// every execution environment of one deployment has the same of both, so
// the generation changes exactly when a deployment changes what the
// function runs: a change of code (a new build; `-trimpath` builds are
// reproducible, so a rebuild of the same source is not one) or of its
// configuration. The Go build info would not do: builds outside a git
// checkout (sam build's scratch directory) carry no VCS stamp, so two
// different builds would look the same. A configuration document read at
// start by name alone (a secret's current value) is not part of it: it may
// differ between warm and cold environments of one deployment.
func Generation(environ []string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("deployment generation: locating the executable: %w", err)
	}
	return generationOf(exe, environ)
}

func generationOf(exe string, environ []string) (string, error) {
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("deployment generation: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("deployment generation: reading %s: %w", exe, err)
	}
	var vars []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "BERTH_") {
			vars = append(vars, kv)
		}
	}
	slices.Sort(vars)
	for _, kv := range vars {
		_, _ = io.WriteString(h, "\x00"+kv)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// Takeover is the reconciler function's container.recover_running_dag_on_start:
// the deployment generation of environ (Generation), recorded in st, with
// the groups an earlier deployment left running interrupted through m when
// the key is false.
func Takeover(cfg *config.Config, st store.Store, m *manager.Manager, environ []string, logger *slog.Logger) (*reconcile.Takeover, error) {
	gen, err := Generation(environ)
	if err != nil {
		return nil, err
	}
	return &reconcile.Takeover{Generation: gen, Interrupt: !cfg.Container.RecoverRunningDAGOnStart,
		Store: st, Groups: m, Logger: logger}, nil
}
