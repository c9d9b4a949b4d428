package secrets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/secrets"
)

func TestFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "secrets.yml")
	if err := os.WriteFile(path, []byte("db-password: hunter2\napi.key: \"k: v\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := secrets.File{Path: path}
	for name, want := range map[string]string{"db-password": "hunter2", "api.key": "k: v"} {
		if got, err := f.Secret(ctx, name); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := f.Secret(ctx, "nope"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("unknown secret: %v, want ErrNotFound", err)
	}
	// Readable by others: refused, and not as "not found" (a fix of the
	// file's mode makes it work, so it is retried).
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Secret(ctx, "db-password"); err == nil || errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "0600") {
		t.Errorf("world-readable file: %v", err)
	}
	if err := os.WriteFile(path, []byte("- hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Secret(ctx, "db-password"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("malformed file: %v (must fail without quoting the content)", err)
	}
}

func TestEnv(t *testing.T) {
	vars := map[string]string{"BERTH_SECRET_DB_PASSWORD": "hunter2", "BERTH_SECRET_API_KEY": ""}
	e := secrets.Env{Prefix: config.DefaultSecretEnvPrefix, Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	if got, err := e.Secret(context.Background(), "db-password"); err != nil || got != "hunter2" {
		t.Errorf("db-password = %q, %v", got, err)
	}
	if got, err := e.Secret(context.Background(), "api.key"); err != nil || got != "" {
		t.Errorf("api.key (set, empty) = %q, %v", got, err)
	}
	if _, err := e.Secret(context.Background(), "other"); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "BERTH_SECRET_OTHER") {
		t.Errorf("unset: %v", err)
	}
}

func TestNew(t *testing.T) {
	cfg := config.Default().Secrets
	if src, err := secrets.New(cfg, os.LookupEnv, nil); err != nil || src != nil {
		t.Errorf("none: %v, %v", src, err)
	}
	cfg.Source = config.SecretsSSM
	if _, err := secrets.New(cfg, os.LookupEnv, nil); err == nil {
		t.Error("ssm without a client: no error")
	}
	cfg.Source, cfg.File = config.SecretsFile, "/etc/berth/secrets.yml"
	if src, err := secrets.New(cfg, os.LookupEnv, nil); err != nil || src != (secrets.File{Path: cfg.File}) {
		t.Errorf("file: %v, %v", src, err)
	}
}
