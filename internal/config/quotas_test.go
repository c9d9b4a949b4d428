package config

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
)

// TestQuotasDefault: quotas.default reads counts, cpus as cores and
// memory as bytes; absent is no limit; a wrong value names its key.
func TestQuotasDefault(t *testing.T) {
	tests := []struct {
		name, file string
		want       container.QuotaUse
		errKey     string
		errMsg     string
	}{
		{name: "absent", file: "", want: container.QuotaUse{}},
		{name: "all set", file: "quotas:\n  default: {instances: 20, running: 5, pending: 3, cpus: 4, memory: 8Gi}\n",
			want: container.QuotaUse{Instances: 20, Running: 5, Pending: 3, CPUMillis: 4000, MemoryBytes: 8 << 30}},
		{name: "fractional cpus", file: "quotas:\n  default: {cpus: 0.5, memory: 512Mi}\n",
			want: container.QuotaUse{CPUMillis: 500, MemoryBytes: 512 << 20}},
		{name: "zero is no limit", file: "quotas:\n  default: {instances: 0, cpus: 0, memory: 0}\n", want: container.QuotaUse{}},
		{name: "negative count", file: "quotas:\n  default: {running: -1}\n", errKey: "quotas.default.running", errMsg: "must be ≥ 0"},
		{name: "bad cpus", file: "quotas:\n  default: {cpus: lots}\n", errKey: "quotas.default.cpus", errMsg: "number of cores"},
		{name: "bad memory", file: "quotas:\n  default: {memory: 8GB!}\n", errKey: "quotas.default.memory", errMsg: "8Gi"},
		{name: "negative memory", file: "quotas:\n  default: {memory: -1Gi}\n", errKey: "quotas.default.memory", errMsg: "got \"-1Gi\""},
		{name: "unknown key", file: "quotas:\n  default: {gpus: 1}\n", errMsg: "gpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			cfg, err := Load(path, noEnv)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) || !strings.Contains(err.Error(), tt.errKey) {
					t.Fatalf("Load: %v, want an error naming %q with %q", err, tt.errKey, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.Quotas.Default.Parse()
			if err != nil || got != tt.want {
				t.Fatalf("quotas.default = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestTokenTeam: a local token names its caller's team.
func TestTokenTeam(t *testing.T) {
	cfg, err := Load(writeFile(t, "auth:\n  team_claim: org\n  tokens:\n    tok-a: {user: alice, team: data}\n    tok-b: {user: bob}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.TeamClaim != "org" {
		t.Errorf("auth.team_claim = %q", cfg.Auth.TeamClaim)
	}
	a, ok := cfg.Auth.Tokens.Lookup("tok-a")
	if !ok || a.User != "alice" || a.Team != "data" {
		t.Errorf("tok-a = %+v %v, want alice of team data", a, ok)
	}
	if b, _ := cfg.Auth.Tokens.Lookup("tok-b"); b.Team != "" {
		t.Errorf("tok-b team = %q, want none", b.Team)
	}
}
