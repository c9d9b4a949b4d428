package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/client/clienttest"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// cliResult is what one run of the CLI printed and returned.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runBerth runs the CLI with env as its whole environment.
func runBerth(t *testing.T, env map[string]string, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cliMain(context.Background(), args, strings.NewReader(stdin), &out, &errOut,
		func(k string) string { return env[k] })
	return cliResult{out.String(), errOut.String(), code}
}

// cliEnv points the CLI at srv as the holder of token, with tiny retry waits.
func cliEnv(srv *clienttest.Server, token string) map[string]string {
	env := map[string]string{"BERTH_URL": srv.URL, "BERTH_RETRY_MAX_WAIT": "1ms"}
	if token != "" {
		env["BERTH_TOKEN"] = token
	}
	return env
}

func (r cliResult) check(t *testing.T, code int, stdout, stderr []string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Fatalf("stdout lacks %q:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func decodeOut[T any](t *testing.T, r cliResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not a %T: %v\n%s", v, err, r.stdout)
	}
	return v
}

// tableRows splits a table into its rows' cells, header first.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// TestCLIContainers walks one container through its life as alice.
func TestCLIContainers(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	env := cliEnv(srv, clienttest.AliceToken)

	created := runBerth(t, env, "", "containers", "create", "--template", "busybox", "--name", "web-1",
		"--env", "GREETING=hello=world", "--label", "app=web", "--label", "tier=front", "--group", "g1", "-o", "json")
	created.check(t, 0, []string{`"status": "pending"`}, nil)
	inst := decodeOut[client.Instance](t, created)
	if inst.Name != "web-1" || inst.Group != "g1" || inst.Labels["app"] != "web" || inst.Labels["tier"] != "front" {
		t.Fatalf("created %+v", inst)
	}
	id := inst.ID

	steps := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
		noStdout       bool
	}{
		{name: "get table", args: []string{"containers", "get", id},
			stdout: []string{"ID", "NAME", "STATUS", "TEMPLATE", "NODE", "AGE", "EXPIRES", id, "web-1", "pending", "busybox"}},
		{name: "get json, flags after the id", args: []string{"containers", "get", id, "-o", "json"},
			stdout: []string{`"id": "` + id + `"`, `"owner": "alice"`}},
		{name: "alias and global flag first", args: []string{"-o", "json", "c", "get", id},
			stdout: []string{`"id": "` + id + `"`}},
		{name: "list table", args: []string{"containers", "list"}, stdout: []string{id, "web-1", "pending"}},
		{name: "list filtered", args: []string{"containers", "list", "--status", "pending,running", "--template", "busybox",
			"--group", "g1", "--label", "app=web", "-o", "json"}, stdout: []string{`"items": [`, id}},
		{name: "list filtered out", args: []string{"containers", "list", "--status", "running", "-o", "json"},
			stdout: []string{`"items": []`}},
		{name: "list bad status", args: []string{"containers", "list", "--status", "sleeping"}, code: 1,
			stderr: []string{"Bad Request (400)", `status: unknown status "sleeping"`}, noStdout: true},
		{name: "create with an env the template does not allow", args: []string{"containers", "create", "--template", "busybox", "--env", "NOPE=1"},
			code: 1, stderr: []string{"berth: Unprocessable Content (422)\n", `  env.NOPE: template "busybox" does not let users set this variable`}, noStdout: true},
		{name: "stop pending is a conflict", args: []string{"containers", "stop", id}, code: 1,
			stderr: []string{"berth: Conflict (409): cannot stop a container that is pending", "current status: pending"}, noStdout: true},
		{name: "start pending is a conflict", args: []string{"containers", "start", id}, code: 1,
			stderr: []string{"Conflict (409)", "current status: pending"}},
		{name: "stale if-match", args: []string{"containers", "delete", id, "--if-match", "99"}, code: 1,
			stderr: []string{"Precondition Failed (412)"}},
		{name: "delete", args: []string{"containers", "delete", id, "--if-match", `"1"`}, stdout: []string{id, "delete_pending"}},
		{name: "delete again is a no-op", args: []string{"containers", "delete", id}, stdout: []string{"delete_pending"}},
		{name: "events table", args: []string{"containers", "events", id},
			stdout: []string{"SEQ", "TYPE", "FROM", "TO", "AT", "MESSAGE", "ContainerCreateRequested", "ContainerDeleteRequested",
				`create from template "busybox"`, "pending", "delete_pending"}},
		{name: "events json", args: []string{"containers", "events", id, "-o", "json"},
			stdout: []string{`"instance_id": "` + id + `"`, `"seq": 2`}},
		{name: "other users see nothing", args: []string{"containers", "get", id, "--token", clienttest.BobToken}, code: 1,
			stderr: []string{"Not Found (404)"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := runBerth(t, env, "", s.args...)
			r.check(t, s.code, s.stdout, s.stderr)
			if s.noStdout && r.stdout != "" {
				t.Fatalf("stdout on failure: %s", r.stdout)
			}
		})
	}

	// The table's columns line up under the header.
	rows := tableRows(runBerth(t, env, "", "containers", "list").stdout)
	if len(rows) != 2 || strings.Join(rows[0], " ") != "ID NAME STATUS TEMPLATE NODE AGE EXPIRES" || len(rows[1]) != 7 ||
		rows[1][0] != id || rows[1][4] != "-" {
		t.Fatalf("table %q", rows)
	}
}

func TestCLIRunningContainer(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	env := cliEnv(srv, clienttest.AliceToken)
	id := decodeOut[client.Instance](t, runBerth(t, env, "", "containers", "create", "--template", "busybox", "-o", "json")).ID

	// wait loops until the container runs.
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(200 * time.Millisecond)
		srv.Drive(t, id, fsm.Running)
	})
	r := runBerth(t, env, "", "containers", "wait", id, "--status", "running", "--timeout", "10s")
	wg.Wait()
	r.check(t, 0, []string{id, "running", "node-1"}, nil)

	runBerth(t, env, "", "containers", "stop", id).check(t, 0, []string{"stop_pending"}, nil)
	srv.Drive(t, id, fsm.Stopped)
	// Waiting for running from stopped cannot succeed: 409 with the status.
	runBerth(t, env, "", "containers", "wait", id, "--timeout", "5s").
		check(t, 1, nil, []string{"Conflict (409)", "will not become running", "current status: stopped"})
	runBerth(t, env, "", "containers", "events", id).
		check(t, 0, []string{"ContainerStopRequested", "running", "stop_pending", "(exit code 137)"}, nil)
}

func TestCLIWaitTimeout(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	env := cliEnv(srv, clienttest.AliceToken)
	id := decodeOut[client.Instance](t, runBerth(t, env, "", "containers", "create", "--template", "busybox", "-o", "json")).ID

	runBerth(t, env, "", "containers", "wait", id, "--status", "running", "--timeout", "200ms").
		check(t, 1, nil, []string{"berth: timeout: container " + id + " did not become running within 200ms; it is pending"})

	// create --wait: the created container is shown, then the timeout.
	r := runBerth(t, env, "", "containers", "create", "--template", "busybox", "--wait", "running", "--timeout", "150ms")
	r.check(t, 1, []string{"pending", "busybox"}, []string{"timeout", "did not become running within 150ms"})
	if rows := tableRows(r.stdout); len(rows) != 2 {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestCLICreateWaitSucceeds(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	env := cliEnv(srv, clienttest.AliceToken)
	// Drive whatever alice creates to running.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			list, err := srv.Store.ListInstances(context.Background(), store.ListQuery{Owner: "alice", Limit: 100})
			if err != nil {
				t.Error(err)
				return
			}
			for _, in := range list.Items {
				if in.Status == fsm.Pending {
					srv.Drive(t, in.ID, fsm.Running)
					return
				}
			}
		}
	})
	r := runBerth(t, env, "", "containers", "create", "--template", "busybox", "--wait", "running", "--timeout", "10s", "-o", "json")
	close(done)
	wg.Wait()
	r.check(t, 0, []string{`"status": "running"`, `"runtime_node_name": "node-1"`}, nil)
}

func TestCLIPagination(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	env := cliEnv(srv, clienttest.AliceToken)
	var ids []string
	for range 5 {
		ids = append(ids, decodeOut[client.Instance](t, runBerth(t, env, "", "containers", "create", "--template", "busybox", "-o", "json")).ID)
	}

	first := runBerth(t, env, "", "containers", "list", "--limit", "2")
	first.check(t, 0, []string{ids[0], ids[1]}, []string{"More containers: run again with --cursor "})
	if rows := tableRows(first.stdout); len(rows) != 3 {
		t.Fatalf("first page %q", rows)
	}
	cursor := strings.Fields(strings.TrimPrefix(first.stderr, "More containers: run again with --cursor "))[0]
	second := runBerth(t, env, "", "containers", "list", "--limit", "2", "--cursor", cursor)
	second.check(t, 0, []string{ids[2], ids[3]}, []string{"More containers"})
	if strings.Contains(second.stdout, ids[0]) {
		t.Fatalf("second page repeats the first:\n%s", second.stdout)
	}

	all := runBerth(t, env, "", "containers", "list", "--limit", "2", "--all-pages")
	all.check(t, 0, ids, nil)
	if all.stderr != "" || len(tableRows(all.stdout)) != 6 {
		t.Fatalf("all pages:\n%s\n%s", all.stdout, all.stderr)
	}
	page := decodeOut[client.Page[client.Instance]](t, runBerth(t, env, "", "containers", "list", "--limit", "2", "--all-pages", "-o", "json"))
	if len(page.Items) != 5 || page.NextCursor != "" {
		t.Fatalf("json all pages: %d items, cursor %q", len(page.Items), page.NextCursor)
	}
	page = decodeOut[client.Page[client.Instance]](t, runBerth(t, env, "", "containers", "list", "--limit", "2", "-o", "json"))
	if len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("json page: %d items, cursor %q", len(page.Items), page.NextCursor)
	}
	// Events page the same way.
	ev := runBerth(t, env, "", "containers", "events", ids[0], "--limit", "1")
	ev.check(t, 0, []string{"ContainerCreateRequested"}, nil)
	// The admin may list alice's by owner; bob may not.
	runBerth(t, cliEnv(srv, clienttest.AdminToken), "", "containers", "list", "--owner", "alice", "--all-pages", "--limit", "3").
		check(t, 0, ids, nil)
	runBerth(t, cliEnv(srv, clienttest.BobToken), "", "containers", "list", "--owner", "alice").
		check(t, 1, nil, []string{"Bad Request (400)", "owner: must be your own user"})
}

func TestCLITemplates(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{NoTemplate: true})
	admin := cliEnv(srv, clienttest.AdminToken)
	alice := cliEnv(srv, clienttest.AliceToken)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonFile := write("box.json", clienttest.BusyboxTemplate)
	yamlFile := write("tiny.yaml", `
name: tiny
description: a YAML template
runtime: docker
image: berth-test/tiny:1
command: [sleep, "60"]
resources:
  cpu: "0.25"
  memory: 32Mi
labels:
  tier: test
`)
	badFile := write("bad.json", `{"runtime":"docker","image":""}`)
	unknownField := write("unknown.yml", "image: x\nbogus: 1\n")

	steps := []struct {
		name           string
		env            map[string]string
		stdin          string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{name: "put json", env: admin, args: []string{"templates", "put", "box", "-f", jsonFile},
			stdout: []string{`template "box" created (version 1)`}},
		{name: "put again", env: admin, args: []string{"templates", "put", "box", "--file", jsonFile},
			stdout: []string{`template "box" updated (version 2)`}},
		{name: "put yaml, name from the file", env: admin, args: []string{"templates", "put", "-f", yamlFile, "-o", "json"},
			stdout: []string{`"name": "tiny"`, `"description": "a YAML template"`, `"cpu": "0.25"`, `"version": 1`}},
		{name: "put from stdin", env: admin, stdin: `{"runtime":"docker","image":"berth-test/stdin:1"}`,
			args: []string{"templates", "put", "piped", "-f", "-"}, stdout: []string{`template "piped" created`}},
		{name: "put invalid", env: admin, args: []string{"templates", "put", "bad", "-f", badFile}, code: 1,
			stderr: []string{"Unprocessable Content (422)", "  image: "}},
		{name: "put unknown field", env: admin, args: []string{"templates", "put", "u", "-f", unknownField}, code: 1,
			stderr: []string{"Bad Request (400)", `unknown field "bogus"`}},
		{name: "put as a user", env: alice, args: []string{"templates", "put", "box", "-f", jsonFile}, code: 1,
			stderr: []string{"Forbidden (403)", "writing templates is for admins"}},
		{name: "put without -f", env: admin, args: []string{"templates", "put", "box"}, code: 2,
			stderr: []string{"-f FILE is required", "Usage: berth templates put"}},
		{name: "put a missing file", env: admin, args: []string{"templates", "put", "box", "-f", filepath.Join(dir, "nope.json")}, code: 1,
			stderr: []string{"reading the template"}},
		{name: "get table", env: alice, args: []string{"templates", "get", "box"},
			stdout: []string{"NAME", "RUNTIME", "IMAGE", "VERSION", "box", "docker", "berth-test/busybox:1", "2"}},
		{name: "get json", env: alice, args: []string{"templates", "get", "tiny", "-o", "json"},
			stdout: []string{`"image": "berth-test/tiny:1"`, `"sleep"`}},
		{name: "list", env: alice, args: []string{"templates", "list"}, stdout: []string{"box", "tiny", "piped"}},
		{name: "list json", env: alice, args: []string{"templates", "list", "-o", "json"}, stdout: []string{`"items": [`, `"name": "piped"`}},
		{name: "delete as a user", env: alice, args: []string{"templates", "delete", "box"}, code: 1, stderr: []string{"Forbidden (403)"}},
		{name: "delete", env: admin, args: []string{"templates", "delete", "box"}, stdout: []string{`template "box" deleted`}},
		{name: "get deleted", env: alice, args: []string{"templates", "get", "box"}, code: 1, stderr: []string{"Not Found (404)"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			runBerth(t, s.env, s.stdin, s.args...).check(t, s.code, s.stdout, s.stderr)
		})
	}
}

func TestCLIAuth(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	r := runBerth(t, cliEnv(srv, ""), "", "containers", "list")
	r.check(t, 1, nil, []string{"berth: Unauthorized (401): a valid bearer token is required", "No token was given: set BERTH_TOKEN or pass --token"})
	if r.stdout != "" {
		t.Fatalf("stdout %q", r.stdout)
	}
	runBerth(t, cliEnv(srv, "wrong"), "", "templates", "list").
		check(t, 1, nil, []string{"Unauthorized (401)", "The token was not accepted"})
	// --token overrides BERTH_TOKEN, --url overrides BERTH_URL.
	env := cliEnv(srv, "wrong")
	env["BERTH_URL"] = "http://127.0.0.1:1"
	runBerth(t, env, "", "templates", "list", "--token", clienttest.AliceToken, "--url", srv.URL).
		check(t, 0, []string{"busybox"}, nil)
	// An unreachable server is an error too, with a hint.
	runBerth(t, env, "", "templates", "list").
		check(t, 1, nil, []string{"berth: GET http://127.0.0.1:1/api/templates", "Is the berth server running"})
}

func TestCLIPathPrefix(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{Prefix: "/prod"})
	runBerth(t, nil, "", "--url", srv.URL+"/", "--token", clienttest.AliceToken, "templates", "list").
		check(t, 0, []string{"busybox"}, nil)
}

func TestCLIQueueFull(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{MaxPending: 1})
	env := cliEnv(srv, clienttest.AliceToken)
	runBerth(t, env, "", "containers", "create", "--template", "busybox").check(t, 0, []string{"pending"}, nil)

	before := srv.Requests.Load()
	start := time.Now()
	r := runBerth(t, env, "", "containers", "create", "--template", "busybox")
	r.check(t, 1, nil, []string{"berth: Too Many Requests (429): ", "create queue full",
		"Gave up after 4 attempt(s); the server asks to retry after 2s."})
	if n := srv.Requests.Load() - before; n != 4 {
		t.Fatalf("%d requests, want 1 + 3 retries", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("retries took %s despite BERTH_RETRY_MAX_WAIT=1ms", d)
	}
	// BERTH_RETRIES=0: one attempt.
	env["BERTH_RETRIES"] = "0"
	before = srv.Requests.Load()
	runBerth(t, env, "", "containers", "create", "--template", "busybox").check(t, 1, nil, []string{"Gave up after 1 attempt(s)"})
	if n := srv.Requests.Load() - before; n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestCLIUnavailableRetried(t *testing.T) {
	isPost := func(r *http.Request) bool { return r.Method == http.MethodPost }
	srv := clienttest.New(t, clienttest.Options{Wrap: clienttest.FailFirst(2, http.StatusServiceUnavailable, "1", isPost)})
	runBerth(t, cliEnv(srv, clienttest.AliceToken), "", "containers", "create", "--template", "busybox").
		check(t, 0, []string{"pending"}, nil)
}

func TestCLIUsage(t *testing.T) {
	env := map[string]string{"BERTH_URL": "http://127.0.0.1:1"}
	for _, tc := range []struct {
		name           string
		args           []string
		env            map[string]string
		code           int
		stdout, stderr []string
	}{
		{name: "no arguments", code: 2, stderr: []string{"Usage:", "berth containers create"}},
		{name: "help", args: []string{"help"}, stdout: []string{"berth containers create --template", "berth templates put",
			"BERTH_URL", "BERTH_TOKEN", "Exit status"}},
		{name: "-h", args: []string{"-h"}, stdout: []string{"Usage:"}},
		{name: "help group", args: []string{"help", "containers"}, stdout: []string{"berth containers wait ID"}},
		{name: "group alone", args: []string{"templates"}, code: 2, stderr: []string{"berth templates put [NAME] -f FILE|-"}},
		{name: "help command", args: []string{"help", "containers", "create"},
			stdout: []string{"Usage: berth containers create --template T", "--template name", "--env K=V", "--timeout duration", "(default 1m0s)", "Global flags"}},
		{name: "command -h", args: []string{"containers", "stop", "-h"}, stdout: []string{"Usage: berth containers stop ID", "--if-match VERSION"}},
		{name: "command --help", args: []string{"templates", "list", "--help"}, stdout: []string{"Usage: berth templates list"}},
		{name: "version", args: []string{"version"}, stdout: []string{"berth-cli "}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`}},
		{name: "unknown subcommand", args: []string{"containers", "frob"}, code: 2, stderr: []string{`unknown command "frob"`}},
		{name: "help unknown", args: []string{"help", "containers", "frob"}, code: 2},
		{name: "missing id", args: []string{"containers", "get"}, code: 2, stderr: []string{"missing ID", "Usage: berth containers get ID"}},
		{name: "extra argument", args: []string{"containers", "get", "a", "b"}, code: 2, stderr: []string{`unexpected argument "b"`}},
		{name: "missing template", args: []string{"containers", "create"}, code: 2, stderr: []string{"--template is required"}},
		{name: "bad pair", args: []string{"containers", "create", "--template", "t", "--env", "NOEQUALS"}, code: 2,
			stderr: []string{`"NOEQUALS" is not KEY=VALUE`}},
		{name: "unknown flag", args: []string{"containers", "list", "--frob"}, code: 2, stderr: []string{"flag provided but not defined: -frob"}},
		{name: "bad output", args: []string{"containers", "list", "-o", "yaml"}, code: 2, stderr: []string{"-o must be table or json"}},
		{name: "bad timeout", args: []string{"containers", "wait", "x", "--timeout", "0s"}, code: 2, stderr: []string{"--timeout must be positive"}},
		{name: "bad URL", args: []string{"templates", "list", "--url", "localhost:8080"}, code: 2, stderr: []string{"invalid base URL"}},
		{name: "bad BERTH_RETRIES", args: []string{"templates", "list"}, env: map[string]string{"BERTH_RETRIES": "many"}, code: 2,
			stderr: []string{"BERTH_RETRIES must be a number"}},
		{name: "-- ends flags", args: []string{"containers", "get", "--", "-o"}, code: 1, stderr: []string{"127.0.0.1:1/api/containers/-o"}},
		{name: "serve is not mine", args: []string{"serve"}, code: 1, stderr: []string{"serve is not available"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env
			if tc.env != nil {
				e = tc.env
			}
			runBerth(t, e, "", tc.args...).check(t, tc.code, tc.stdout, tc.stderr)
		})
	}
}

func TestCLIAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 45 * time.Second: "45s", 90 * time.Second: "1m", 59 * time.Minute: "59m",
		5 * time.Hour: "5h", 47 * time.Hour: "47h", 72 * time.Hour: "3d",
	} {
		if got := cliAge(d); got != want {
			t.Errorf("cliAge(%s) = %q, want %q", d, got, want)
		}
	}
	if got := cliClean("a\tb\nc\x1b[31m"); got != "a b c?[31m" {
		t.Errorf("cliClean: %q", got)
	}
}

// TestCLILifetime: create --lifetime shows the container's EXPIRES, extend
// moves it, and an extension past the max is the API's 422 naming it.
func TestCLILifetime(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	admin, err := client.New(srv.URL, clienttest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.PutTemplate(context.Background(), "brief", client.Template{Runtime: "docker", Image: "berth-test/busybox:1",
		Lifetime: &container.Lifetime{Default: "10m", Max: "1h"}}); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(srv, clienttest.AliceToken)
	created := runBerth(t, env, "", "containers", "create", "--template", "brief", "--lifetime", "20m", "-o", "json")
	created.check(t, 0, []string{`"expires_at"`}, nil)
	inst := decodeOut[client.Instance](t, created)
	rows := tableRows(runBerth(t, env, "", "containers", "get", inst.ID).stdout)
	if len(rows) != 2 || rows[0][6] != "EXPIRES" || rows[1][6] != "19m" && rows[1][6] != "20m" {
		t.Fatalf("table %q, want EXPIRES 20m", rows)
	}
	extended := runBerth(t, env, "", "containers", "extend", inst.ID, "--by", "10m", "-o", "json")
	extended.check(t, 0, nil, nil)
	if got := decodeOut[client.Instance](t, extended); got.ExpiresAt.Sub(*inst.ExpiresAt) != 10*time.Minute {
		t.Fatalf("extended by 10m: expires_at %v, was %v", got.ExpiresAt, inst.ExpiresAt)
	}
	runBerth(t, env, "", "containers", "extend", inst.ID, "--by", "2h").check(t, 1,
		nil, []string{"Unprocessable Content (422)", "max lifetime 1h0m0s"})
	runBerth(t, env, "", "containers", "extend", inst.ID).check(t, 2, nil, []string{"--by is required"})
}

// TestCLIRetention: containers get shows, below the table, the retention
// an instance was created under and, once it has stopped, when berth
// deletes it (DELETE AT); a start clears it; an instance without a
// retention shows neither.
func TestCLIRetention(t *testing.T) {
	srv := clienttest.New(t, clienttest.Options{})
	admin, err := client.New(srv.URL, clienttest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.PutTemplate(context.Background(), "kept", client.Template{Runtime: "docker", Image: "berth-test/busybox:1",
		Retention: &container.Retention{Stopped: "24h", Failed: "7d"}}); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(srv, clienttest.AliceToken)
	id := decodeOut[client.Instance](t, runBerth(t, env, "", "containers", "create", "--template", "kept", "-o", "json")).ID
	if rows := tableRows(runBerth(t, env, "", "containers", "get", id).stdout); len(rows) != 5 ||
		strings.Join(rows[3], " ") != "RETENTION DELETE AT" || strings.Join(rows[4], " ") != "stopped 24h, failed 7d -" {
		t.Fatalf("active: table %q, want the retention and no DELETE AT", rows)
	}
	srv.Drive(t, id, fsm.Running)
	runBerth(t, env, "", "containers", "stop", id).check(t, 0, []string{"stop_pending"}, nil)
	stopped := srv.Drive(t, id, fsm.Stopped)
	if stopped.DeleteAt == nil {
		t.Fatal("stopped under a retention: no delete_at")
	}
	at := stopped.DeleteAt.UTC().Format(time.RFC3339)
	runBerth(t, env, "", "containers", "get", id).check(t, 0, []string{"DELETE AT", at + " (in 23h)"}, nil)
	runBerth(t, env, "", "containers", "get", id, "-o", "json").check(t, 0, []string{`"delete_at"`, `"retention": {`}, nil)
	started := runBerth(t, env, "", "containers", "start", id)
	started.check(t, 0, []string{"start_pending", "RETENTION"}, nil)
	if strings.Contains(started.stdout, at) {
		t.Fatalf("started again, still shows the delete at %s:\n%s", at, started.stdout)
	}

	plain := runBerth(t, env, "", "containers", "create", "--template", "busybox")
	plain.check(t, 0, []string{"pending"}, nil)
	if strings.Contains(plain.stdout, "RETENTION") || strings.Contains(plain.stdout, "DELETE AT") {
		t.Fatalf("no retention, yet:\n%s", plain.stdout)
	}
}

// TestCLIPrintRetention: the DELETE AT cell counts down, then says "due"
// until berth has deleted the instance; a status the retention leaves
// out is not listed.
func TestCLIPrintRetention(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   client.Instance
		want string
	}{
		{client.Instance{}, ""},
		{client.Instance{Retention: &container.Retention{Failed: "7d"}}, "\nRETENTION   DELETE AT\nfailed 7d   -\n"},
		{client.Instance{Retention: &container.Retention{Stopped: "90m"}, DeleteAt: new(now.Add(90 * time.Minute))},
			"\nRETENTION     DELETE AT\nstopped 90m   2026-12-05T07:30:00Z (in 1h)\n"},
		{client.Instance{Retention: &container.Retention{Stopped: "1h", Failed: "2h"}, DeleteAt: new(now.Add(-time.Second))},
			"\nRETENTION               DELETE AT\nstopped 1h, failed 2h   2026-12-05T05:59:59Z (due)\n"},
	} {
		var b strings.Builder
		if err := cliPrintRetention(&b, tc.in, now); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("retention %+v, delete_at %v:\n got %q\nwant %q", tc.in.Retention, tc.in.DeleteAt, b.String(), tc.want)
		}
	}
}

// TestCLIPrintRestarts: an instance under a restart policy shows its
// restarts out of the limit, the exit that brought the latest and when the
// next comes; one without a policy (or under never) shows nothing.
func TestCLIPrintRestarts(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	two := 2
	for _, tc := range []struct {
		in   client.Instance
		want string
	}{
		{client.Instance{}, ""},
		{client.Instance{Restart: &container.Restart{Policy: container.RestartNever}}, ""},
		{client.Instance{Restart: &container.Restart{Policy: container.RestartAlways}}, "\nRESTART   RESTARTS   LAST EXIT   NEXT\nalways    0/3        -           -\n"},
		{client.Instance{Restart: &container.Restart{Policy: container.RestartOnFailure, MaxRestarts: &two}, Restarts: 1,
			LastExit: new(3), RestartAt: new(now.Add(2 * time.Second))},
			"\nRESTART      RESTARTS   LAST EXIT   NEXT\non-failure   1/2        3           2026-12-05T06:00:02Z (in 2s)\n"},
	} {
		var b strings.Builder
		if err := cliPrintRestarts(&b, tc.in, now); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("restart %+v:\n got %q\nwant %q", tc.in.Restart, b.String(), tc.want)
		}
	}
}
