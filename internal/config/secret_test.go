package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// The secrets of secretFile; none may appear in any printout.
var secrets = []string{
	"tok-alice-s3cr3t-AAAA", "tok-root-s3cr3t-BBBB", "hunter2-registry-CCCC",
	"PRIVATE-KEY-DDDD", "scrape-s3cr3t-EEEE",
}

const secretFile = `
server:
  metrics_token: scrape-s3cr3t-EEEE
auth:
  tokens:
    tok-alice-s3cr3t-AAAA: {user: alice}
    tok-root-s3cr3t-BBBB: {user: root, admin: true}
docker:
  hosts:
    - name: remote
      endpoint: tcp://docker.internal:2376
      tls:
        cert: "-----BEGIN CERTIFICATE-----"
        key: "PRIVATE-KEY-DDDD"
  registries:
    - {host: ghcr.io, username: bot, password: hunter2-registry-CCCC}
`

func TestSecretsNeverPrint(t *testing.T) {
	cfg, err := Load(writeFile(t, secretFile), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	// The values are there for those who ask.
	if cfg.Auth.Tokens[0].Token.Reveal() != secrets[0] || cfg.Docker.Registries[0].Password != secrets[2] ||
		cfg.Docker.Hosts[0].TLS.Key != secrets[3] || cfg.Server.MetricsToken.Reveal() != secrets[4] {
		t.Fatal("secrets not loaded")
	}

	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outputs["cfg "+verb] = fmt.Sprintf(verb, cfg)
		outputs["*cfg "+verb] = fmt.Sprintf(verb, *cfg)
		outputs["auth "+verb] = fmt.Sprintf(verb, cfg.Auth)
		outputs["tokens "+verb] = fmt.Sprintf(verb, cfg.Auth.Tokens)
		outputs["token "+verb] = fmt.Sprintf(verb, cfg.Auth.Tokens[0].Token)
		outputs["docker "+verb] = fmt.Sprintf(verb, cfg.Docker)
		outputs["host "+verb] = fmt.Sprintf(verb, cfg.Docker.Hosts[0])
		outputs["tls "+verb] = fmt.Sprintf(verb, cfg.Docker.Hosts[0].TLS)
		outputs["registry "+verb] = fmt.Sprintf(verb, cfg.Docker.Registries[0])
		outputs["server "+verb] = fmt.Sprintf(verb, cfg.Server)
	}
	for _, sec := range []string{"server", "auth"} {
		outputs["EnvValues "+sec] = fmt.Sprint(EnvValues(cfg, sec))
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs["json"] = string(js)

	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("config", "config", cfg, "auth", cfg.Auth, "token", cfg.Auth.Tokens[0].Token,
			"registry", cfg.Docker.Registries[0], "tls", cfg.Docker.Hosts[0].TLS)
		outputs[name] = buf.String()
	}

	for name, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s prints secret %q:\n%s", name, s, out)
			}
		}
	}
	// The structure around the secrets still shows.
	for _, name := range []string{"cfg %+v", "auth %+v", "json", "slog json"} {
		if !strings.Contains(outputs[name], "alice") || !strings.Contains(outputs[name], "[redacted]") {
			t.Errorf("%s lost the non-secret fields or the redaction marker:\n%s", name, outputs[name])
		}
	}
	for _, name := range []string{"registry %+v", "registry %#v", "tls %+v", "slog json", "json"} {
		if !strings.Contains(outputs[name], "ghcr.io") && !strings.Contains(outputs[name], "BEGIN CERTIFICATE") {
			t.Errorf("%s lost the non-secret fields:\n%s", name, outputs[name])
		}
	}
	if got := outputs["registry %#v"]; !strings.HasPrefix(got, "config.Registry{") {
		t.Errorf("registry %%#v = %s, want the public type name", got)
	}
}

// TestMetricsTokenChecked: server.metrics_token travels in a header and is
// no user's token; the errors say so without quoting it.
func TestMetricsTokenChecked(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"server:\n  metrics_token: \"scrape s3cr3t\"\n", "server.metrics_token: must not contain spaces"},
		{"server:\n  metrics_token: tok-alice-s3cr3t-AAAA\nauth:\n  tokens:\n    tok-alice-s3cr3t-AAAA: {user: alice}\n",
			"server.metrics_token: is also the token of auth.tokens[0] (alice)"},
	} {
		_, err := Load(writeFile(t, tc.body), noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	cfg, err := Load("", envOf(map[string]string{"BERTH_SERVER_METRICS_TOKEN": "scrape-s3cr3t-EEEE"}))
	if err != nil || cfg.Server.MetricsToken.Reveal() != "scrape-s3cr3t-EEEE" {
		t.Fatalf("BERTH_SERVER_METRICS_TOKEN: %v", err)
	}
}

// TestTokenErrorsNeverQuoteTokens: an error about an entry of auth.tokens
// names it by position, not by its key.
func TestTokenErrorsNeverQuoteTokens(t *testing.T) {
	body := `
auth:
  tokens:
    tok-alice-s3cr3t-AAAA: {user: alice, admin: sometimes, extra: 1}
    tok-alice-s3cr3t-AAAA: {user: alice2}
    tok-root-s3cr3t-BBBB: root
    ? [tok-list-s3cr3t]
    : {user: x}
`
	_, err := Load(writeFile(t, body), noEnv)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, s := range append(secrets, "tok-list-s3cr3t") {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error quotes secret %q:\n%v", s, err)
		}
	}
	for _, want := range []string{"auth.tokens[0].admin", "auth.tokens[0].extra: unknown key", "auth.tokens[1]: same token as auth.tokens[0]",
		"auth.tokens[2]: want {user, admin, team, on_behalf_of}", "auth.tokens[3]: token must be a non-empty string"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestTokensNotAMap(t *testing.T) {
	_, err := Load(writeFile(t, "auth:\n  tokens: [tok-s3cr3t-EEEE]\n"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "auth.tokens: must be a map") || strings.Contains(err.Error(), "EEEE") {
		t.Fatalf("error = %v", err)
	}
}
