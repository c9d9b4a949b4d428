package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// TestServeSecretEnv: `berth serve` with a secrets file. The value a
// template's secret_env names is in the container's environment, and in no
// API response (to its owner or to an admin), no stored record and no log
// line of the server.
func TestServeSecretEnv(t *testing.T) {
	t.Parallel()
	value := "s3cr3t-" + strings.ToLower(container.NewID())
	file := filepath.Join(t.TempDir(), "secrets.yml")
	if err := os.WriteFile(file, []byte("db-password: "+value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newServeEnv(t, serveOptions{extra: "secrets:\n  source: file\n  file: " + file + "\n"})
	e.start()
	e.must(e.call("PUT", "/api/templates/db", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sleep", "3600"},
		SecretEnv: map[string]string{"DB_PASSWORD": "db-password"}}), http.StatusCreated)
	in := e.create("db")
	running := e.waitFor(in.ID, fsm.Running, time.Minute)

	cli := e.engine.Client(running.RuntimeNodeName)
	insp, err := cli.ContainerInspect(context.Background(), runtime.ObjectName(in.ID), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(insp.Container.Config.Env, "DB_PASSWORD="+value) {
		t.Fatalf("container env lacks the secret: %q", insp.Container.Config.Env)
	}

	p := "/api/containers/" + in.ID
	var seen []string
	for _, tok := range []string{aliceToken, adminToken} {
		for _, path := range []string{p, p + "/events", "/api/containers", "/api/templates", "/api/templates/db", "/healthz"} {
			r := e.call("GET", path, tok, nil)
			seen = append(seen, path+": "+string(r.body))
		}
	}
	e.must(e.call("POST", p+"/stop", aliceToken, nil), http.StatusAccepted)
	e.waitFor(in.ID, fsm.Stopped, time.Minute)
	e.stop()

	st, err := boltstore.Open(filepath.Join(e.dir, "data", "berth.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dump, err := os.ReadFile(filepath.Join(e.dir, "data", "berth.db"))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"API": strings.Join(seen, "\n"), "store file": string(dump),
		"server log": e.logs.String(), "server output": e.out.String()} {
		if strings.Contains(text, value) {
			t.Errorf("the secret's value is in the %s", what)
		}
	}
	stored, err := st.GetInstance(context.Background(), in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.SecretEnv["DB_PASSWORD"] != "db-password" || stored.Spec.Env["DB_PASSWORD"] != "" {
		t.Fatalf("stored spec: env %v secret_env %v", stored.Spec.Env, stored.Spec.SecretEnv)
	}
}

// TestServeMissingSecretNoServerPath: a create whose template names a
// secret the file lacks fails saying which secret is not available; what
// its (non-admin) owner reads of it, the instance and its events, names no
// server path, while the server's log keeps where it looked.
func TestServeMissingSecretNoServerPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.yml")
	if err := os.WriteFile(file, []byte("other: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newServeEnv(t, serveOptions{extra: "secrets:\n  source: file\n  file: " + file + "\n"})
	e.start()
	e.must(e.call("PUT", "/api/templates/db", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sleep", "3600"},
		SecretEnv: map[string]string{"DB_PASSWORD": "db-password"}}), http.StatusCreated)
	in := e.create("db")
	failed := e.waitFor(in.ID, fsm.Failed, time.Minute)
	if want := `secret "db-password" is not available`; !strings.Contains(failed.StatusReason, want) {
		t.Fatalf("status_reason %q, want it to say %s", failed.StatusReason, want)
	}
	p := "/api/containers/" + in.ID
	for _, path := range []string{p, p + "/events", "/api/containers"} {
		body := string(e.must(e.call("GET", path, aliceToken, nil), http.StatusOK).body)
		for _, server := range []string{dir, "secrets.yml"} {
			if strings.Contains(body, server) {
				t.Errorf("the owner reads %q in GET %s: %s", server, path, body)
			}
		}
	}
	if !strings.Contains(e.logs.String(), file) {
		t.Errorf("the server's log does not say where the secret was looked up:\n%s", tail(e.logs.String(), 4000))
	}
}
