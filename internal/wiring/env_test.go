package wiring

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadConfig(t *testing.T) {
	cfg, err := LoadConfig("api", envOf(map[string]string{"BERTH_STORE_TABLE_PREFIX": "prod-"}), false)
	if err != nil || cfg.Store.TablePrefix != "prod-" || cfg.Store.Backend != "dynamodb" {
		t.Fatalf("LoadConfig = %+v, %v", cfg, err)
	}
	if _, err := LoadConfig("api", envOf(map[string]string{"BERTH_STORE_BACKEND": "bolt"}), false); err == nil {
		t.Fatal("an explicit bolt store was accepted")
	}
	if _, err := LoadConfig("worker", envOf(nil), true); err == nil {
		t.Fatal("sqs without queue URLs was accepted")
	}
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte("docker:\n  hosts:\n    - {name: h1, endpoint: unix:///var/run/docker.sock}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = LoadConfig("worker", envOf(map[string]string{ConfigFileVar: file,
		"BERTH_QUEUE_CREATE_QUEUE_URL": "http://q/c", "BERTH_QUEUE_LIFECYCLE_QUEUE_URL": "http://q/l"}), true)
	if err != nil || len(cfg.Docker.Hosts) != 1 || cfg.Queue.Backend != "sqs" {
		t.Fatalf("with a file: %+v, %v", cfg, err)
	}
}

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"": slog.LevelInfo, "debug": slog.LevelDebug, "TRACE": slog.LevelDebug,
		"WARN": slog.LevelWarn, "error": slog.LevelError, "FATAL": slog.LevelError, "bogus": slog.LevelInfo} {
		if got := LogLevel(in); got != want {
			t.Errorf("LogLevel(%q) = %v, want %v", in, got, want)
		}
	}
}
