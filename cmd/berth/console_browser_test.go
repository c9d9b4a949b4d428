package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/testenv"
)

// axeSource is axe-core (testdata/axe-core, MPL-2.0), injected into each
// console page by the test only: the console never ships it.
//
//go:embed testdata/axe-core/axe.min.js
var axeSource string

// envConsoleShots, when set to a directory, makes the browser test save a
// screenshot of each main page there (docs/console/*.png are made so).
const envConsoleShots = "BERTH_CONSOLE_SCREENSHOTS"

// browser is one headless Chromium tab on a berth serve.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newBrowser starts Debian's Chromium with the flags this machine needs (no
// sandbox as root, nothing reaching out to the network) and a fresh profile.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe := testenv.Chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first Run starts the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return &browser{t: t, ctx: ctx, base: base}
}

// run runs actions with a deadline, failing the test with what the page
// showed if they do not complete.
func (b *browser) run(what string, within time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	get(b, what, within, chromedp.Steps(steps...))
}

// get runs one action that returns a value, failing the test with what the
// page showed if it does not complete in time.
func get[T any](b *browser, what string, within time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		sctx, scancel := context.WithTimeout(b.ctx, 20*time.Second)
		defer scancel()
		text, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText`))
		b.t.Fatalf("%s: %v\npage %s", what, err, text)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return get(b, "reading "+sel, 30*time.Second, chromedp.Text(chromedp.CSS(sel)))
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	return get(b, "evaluating "+expr, 30*time.Second, chromedp.Evaluate[string](expr))
}

// poll waits until the expression is true in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return err
	})
}

// signIn signs in with a token, by keyboard: type it, press Enter.
func (b *browser) signIn(token string) {
	b.t.Helper()
	b.run("signing in", 60*time.Second,
		chromedp.Navigate(b.base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.Focus(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/containers"]`)),
		chromedp.WaitVisible(chromedp.CSS(`select[name=status]`)),
	)
}

func (b *browser) open(hash, waitSel string) {
	b.t.Helper()
	b.run("opening "+hash, 60*time.Second,
		chromedp.Navigate(b.base+"/console"+hash),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready]`)),
		chromedp.WaitVisible(chromedp.CSS(waitSel)))
}

type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
		} `json:"nodes"`
	} `json:"violations"`
}

// axe runs axe-core on the page as it is now and fails on any serious or
// critical violation; minor and moderate ones are logged.
func (b *browser) axe(page string) {
	b.t.Helper()
	get(b, "injecting axe", 60*time.Second, chromedp.Evaluate[int](axeSource+";0"))
	raw := get(b, "axe on "+page, 60*time.Second,
		chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r))`,
			func(p *cdpruntime.EvaluateParams) { p.AwaitPromise = new(true) }))
	var res axeResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		b.t.Fatalf("axe on %s: %v", page, err)
	}
	for _, v := range res.Violations {
		targets := []string{}
		for _, n := range v.Nodes {
			targets = append(targets, fmt.Sprint(n.Target...))
		}
		msg := fmt.Sprintf("axe on %s: %s (%s): %s at %s", page, v.ID, v.Impact, v.Help, strings.Join(targets, ", "))
		if v.Impact == "serious" || v.Impact == "critical" {
			b.t.Error(msg)
		} else {
			b.t.Log(msg)
		}
	}
}

// narrow checks the page at 360 CSS pixels wide: nothing runs off to the
// side (no horizontal scrolling of the page itself), then goes back to the
// desktop width.
func (b *browser) narrow(page string) {
	b.t.Helper()
	b.run("360 px view of "+page, 30*time.Second, chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(2)))
	width := get(b, "measuring "+page, 30*time.Second, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if width > 360 {
		b.t.Errorf("%s at 360 px: the page is %d px wide", page, width)
	}
	b.shot(page + "-360")
	b.run("desktop view", 30*time.Second, chromedp.EmulateViewport(1280, 900, chromedp.EmulateScale(1)))
}

func (b *browser) shot(name string) {
	dir := os.Getenv(envConsoleShots)
	if dir == "" {
		return
	}
	// The passing notice would cover part of the page.
	b.eval(`document.getElementById("status").textContent = ""`)
	png := get(b, "screenshot "+name, 60*time.Second, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o600); err != nil {
		b.t.Error(err)
	}
}

// TestConsoleInBrowser drives the console in headless Chromium against
// berth serve on the real Docker engine: alice signs in (keyboard only),
// creates a container from a template, sees it reach running without a
// reload, stops it, reads its timeline and deletes it; she never sees bob's
// container; an admin edits a template and sees the server's 422 at the
// field. axe-core checks every page, and each page is checked at 360 px.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{noImageRefresh: true})
	e.start()
	e.putTemplates()
	e.must(e.call("PUT", "/api/templates/talker", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "echo console-logs-line; exec sleep 3600"}, Exec: true}), http.StatusCreated)
	bobs := e.instance(e.must(e.call("POST", "/api/containers", bobToken, map[string]string{"template": "sleeper", "name": "bobs-secret"}), http.StatusAccepted))
	grouped := e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "sleeper", "name": "step-1", "group": "nightly"}), http.StatusAccepted))
	e.waitFor(grouped.ID, fsm.Running, time.Minute)

	b := newBrowser(t, "http://"+e.addr)

	// GET / sends the browser to the console, which asks for a token.
	b.run("opening /", 60*time.Second, chromedp.Navigate(b.base+"/"), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
	loc := get(b, "reading the URL", 20*time.Second, chromedp.Location())
	if !strings.HasPrefix(loc, b.base+"/console") {
		t.Errorf("GET / landed on %s, want the console", loc)
	}
	b.axe("sign-in")
	b.shot("signin")
	b.narrow("signin")

	// A wrong token is refused at the field.
	b.run("a wrong token", 60*time.Second,
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), "not-a-token"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token][aria-invalid=true]`)))

	b.signIn(aliceToken)
	b.axe("containers")

	// Create from a template; the page moves to the instance and shows it
	// reach running by itself.
	b.run("creating from sleeper", 60*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`select[name=template]`)),
		chromedp.SetValue(chromedp.CSS(`select[name=template]`), "sleeper"),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "web-1"),
		chromedp.Click(chromedp.CSS(`form button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`#action-stop`)))
	hash := b.eval(`location.hash`)
	id := strings.TrimPrefix(hash, "#/containers/")
	if id == hash || id == "" {
		t.Fatalf("after create the page is %q, want #/containers/<id>", hash)
	}
	b.run("waiting for running", 90*time.Second, chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-running`)))
	if !strings.Contains(b.text("h1"), "web-1") {
		t.Errorf("instance page title %q", b.text("h1"))
	}
	// The FSM allows every action from running; start is a restart there.
	b.run("reading the actions", 30*time.Second, chromedp.WaitEnabled(chromedp.CSS(`#action-stop`)), chromedp.WaitEnabled(chromedp.CSS(`#action-delete`)))
	if s := b.text("#action-start"); s != "Restart" {
		t.Errorf("start on a running container reads %q, want Restart", s)
	}
	b.axe("instance")
	b.shot("instance")
	b.narrow("instance")
	// sleeper does not allow exec: no command box.
	b.run("reading the template's exec", 30*time.Second, poll(`document.getElementById("exec").dataset.exec === "off" && document.getElementById("exec").hidden`))

	// Pause where it runs, resume where it is paused (POST /pause, /resume).
	b.run("pausing", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#action-pause`)),
		chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-paused`)),
		chromedp.WaitEnabled(chromedp.CSS(`#action-resume`)))
	b.axe("paused")
	b.run("resuming", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#action-resume`)),
		chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-running`)),
		chromedp.WaitEnabled(chromedp.CSS(`#action-pause`)))

	// Stop; the page follows to stopped, and the timeline tells the story.
	b.run("stopping", 60*time.Second,
		chromedp.Click(chromedp.CSS(`#action-stop`)),
		chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-stopped`)),
		chromedp.WaitEnabled(chromedp.CSS(`#action-start`)))
	b.run("waiting for the timeline", 60*time.Second, poll(`document.getElementById("timeline") && document.getElementById("timeline").innerText.includes("ContainerStopped")`))
	timeline := b.text("#timeline")
	for _, want := range []string{"ContainerCreateRequested", "ContainerStarted", "pending → creating", "ContainerStopRequested", "running → stop_pending", "ContainerStopped", "stop requested"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("timeline lacks %q:\n%s", want, timeline)
		}
	}
	if !strings.Contains(b.text("#action-stop + .hint"), "already stopped") {
		t.Errorf("stop is not disabled with a reason on a stopped container")
	}

	// An instance that ended under a retention shows it, and when berth
	// deletes it.
	e.must(e.call("PUT", "/api/templates/kept", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever, Command: []string{"sh", "-c", "exit 0"}, Retention: &container.Retention{Stopped: "24h", Failed: "7d"}}), http.StatusCreated)
	kept := e.waitFor(e.create("kept").ID, fsm.Stopped, time.Minute)
	if kept.DeleteAt == nil {
		t.Fatal("stopped under a retention: no delete_at")
	}
	b.open("#/containers/"+kept.ID, `#inst-status .s-stopped`)
	b.run("reading the retention", 30*time.Second, poll(`document.getElementById("main").innerText.includes("Deletes at")`))
	at := b.eval(`new Date(` + fmt.Sprint(kept.DeleteAt.UnixMilli()) + `).toLocaleString()`)
	if s := b.text("#main"); !strings.Contains(s, "Deletes at\n"+at) || !strings.Contains(s, "Retention\nstopped 24h, failed 7d") {
		t.Errorf("instance page of a stopped instance under a retention lacks Deletes at %s or the retention:\n%s", at, s)
	}

	// The container list: alice's own, never bob's.
	b.open("#/containers", "#containers")
	list := b.text("#containers")
	if !strings.Contains(list, "web-1") || !strings.Contains(list, "step-1") {
		t.Errorf("alice's list lacks her containers:\n%s", list)
	}
	if strings.Contains(list, "bobs-secret") || strings.Contains(list, "bob") {
		t.Errorf("alice sees bob's container:\n%s", list)
	}
	b.shot("containers")
	b.narrow("containers")
	// Nor by its id.
	b.open("#/containers/"+bobs.ID, `#main .error`)
	if s := b.text(`#main .error`); !strings.Contains(s, "404") {
		t.Errorf("bob's container by id: %q, want a 404", s)
	}

	// The logs panel: what a container printed, through the logs route.
	talker := e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "talker", "name": "talker-1"}), http.StatusAccepted))
	e.waitFor(talker.ID, fsm.Running, time.Minute)
	b.open("#/containers/"+talker.ID, `#logs-refresh`)
	b.run("reading the logs", 60*time.Second, poll(`document.getElementById("logs").innerText.includes("console-logs-line")`))
	b.axe("instance with logs")
	// The usage panel: CPU and memory of the running container, drawn from
	// the stats route over two readings.
	b.run("reading the usage", 60*time.Second, poll(`(document.querySelector("#stats-mem polyline")?.getAttribute("points") || "").split(" ").length >= 2 && document.getElementById("stats").innerText.includes("cores") && document.getElementById("stats-note").innerText.includes("2 reading")`))
	if s := b.text("#stats"); !strings.Contains(s, "Memory:") || !strings.Contains(s, "Processes:") {
		t.Errorf("usage panel: %q", s)
	}
	b.axe("instance with usage")
	// The command box (talker allows exec): a command's exit code and both
	// streams, apart; the exec then in the timeline.
	b.run("running a command", 60*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#exec-cmd`)),
		chromedp.SendKeys(chromedp.CSS(`#exec-cmd`), `sh -c "echo exec-out; echo exec-err >&2; exit 4"`),
		chromedp.Click(chromedp.CSS(`#exec-run`)),
		poll(`(document.getElementById("exec-status").innerText || "").startsWith("Exit 4")`))
	if out, errOut := strings.TrimSpace(b.text("#exec-stdout")), strings.TrimSpace(b.text("#exec-stderr")); out != "exec-out" || errOut != "exec-err" {
		t.Errorf("command box: stdout %q, stderr %q", out, errOut)
	}
	b.run("the exec in the timeline", 30*time.Second, poll(`document.getElementById("timeline").innerText.includes("ContainerExecFinished")`))
	b.axe("instance with a command run")
	b.narrow("instance-exec")

	// Groups: members by status, and the finish policy shown before it is
	// confirmed.
	b.open("#/groups", `a[href="#/groups/nightly"]`)
	b.axe("groups")
	b.open("#/groups/nightly", `#group-finish`)
	if s := b.text("#main"); !strings.Contains(s, "dag_node_cleanup_on_dag_finished") || !strings.Contains(s, "step-1") {
		t.Errorf("group page lacks the policies or the member:\n%s", s)
	}
	b.run("asking to finish", 30*time.Second, chromedp.Click(chromedp.CSS(`#group-finish`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-finish`)))
	if s := b.text(`[role=alertdialog]`); !strings.Contains(s, `policy "delete"`) {
		t.Errorf("finish confirmation does not show the policy: %q", s)
	}
	b.axe("group")
	b.shot("group")
	b.narrow("group")
	b.run("finishing", 60*time.Second, chromedp.Click(chromedp.CSS(`#confirm-finish`)), chromedp.WaitVisible(chromedp.CSS(`[role=status] ul li`)))
	if s := b.text(`[role=status] ul`); !strings.Contains(s, "step-1") {
		t.Errorf("finish result: %q", s)
	}

	// Delete the instance (with a confirmation); the page shows it gone and
	// its history stays readable.
	b.open("#/containers/"+id, `#action-delete`)
	b.run("deleting", 60*time.Second,
		chromedp.WaitEnabled(chromedp.CSS(`#action-delete`)),
		chromedp.Click(chromedp.CSS(`#action-delete`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-delete`)),
		chromedp.Click(chromedp.CSS(`#confirm-delete`)),
		chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-deleted`)),
		poll(`document.getElementById("timeline").innerText.includes("ContainerDeleted")`))
	if r := e.call("GET", "/api/containers/"+id, aliceToken, nil); r.status != http.StatusNotFound {
		t.Errorf("after the console's delete GET is %d", r.status)
	}

	// Templates as a user: readable, not editable.
	b.open("#/templates/sleeper", `pre`)
	if forms := b.eval(`String(document.querySelectorAll("#main form").length)`); forms != "0" {
		t.Errorf("a non-admin is offered %s template form(s)", forms)
	}

	// An admin edits a template; the server's 422 shows at the field.
	b.run("signing out", 30*time.Second, chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
	b.signIn(adminToken)
	// An admin sees everyone's containers.
	b.run("the admin's list", 60*time.Second, poll(`document.getElementById("containers") && document.getElementById("containers").innerText.includes("bobs-secret")`))
	b.open("#/templates", `a[href="#/templates/sleeper"]`)
	b.axe("templates")
	b.shot("templates")
	b.narrow("templates")
	b.open("#/templates/sleeper", `#t-image`)
	b.run("saving a bad image", 60*time.Second,
		chromedp.SetValue(chromedp.CSS(`#t-image`), "Not A/Valid::Image"),
		chromedp.Click(chromedp.CSS(`#template-save`)),
		chromedp.WaitVisible(chromedp.CSS(`#t-image[aria-invalid=true]`)))
	if s := b.text("#t-image-err"); s == "" {
		t.Errorf("no error at the image field")
	}
	if focused := b.eval(`document.activeElement.id`); focused != "t-image" {
		t.Errorf("focus is on %q after the 422, want the image field", focused)
	}
	b.axe("template edit")
	b.shot("template")
	b.narrow("template")
	// A good edit saves.
	b.run("saving a good edit", 60*time.Second,
		chromedp.SetValue(chromedp.CSS(`#t-image`), e.image),
		chromedp.SetValue(chromedp.CSS(`#t-description`), "sleeps an hour"),
		chromedp.Click(chromedp.CSS(`#template-save`)),
		poll(`document.querySelector("pre") && document.querySelector("pre").innerText.includes("sleeps an hour")`))
	var tpl struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(e.must(e.call("GET", "/api/templates/sleeper", adminToken, nil), http.StatusOK).body, &tpl); err != nil || tpl.Description != "sleeps an hour" {
		t.Errorf("the edit did not reach the server: %+v %v", tpl, err)
	}

	// An admin sets a user's quota override from the quotas page.
	b.open("#/quotas", `#q-name`)
	b.axe("quotas")
	b.shot("quotas")
	b.run("setting an override", 60*time.Second,
		chromedp.SetValue(chromedp.CSS(`#q-name`), "alice"),
		chromedp.SetValue(chromedp.CSS(`#q-running`), "3"),
		chromedp.Click(chromedp.CSS(`#quota-save`)),
		poll(`document.getElementById("main").innerText.includes("user alice")`))
	var q struct {
		Running int `json:"running"`
	}
	if err := json.Unmarshal(e.must(e.call("GET", "/api/quotas/users/alice", adminToken, nil), http.StatusOK).body, &q); err != nil || q.Running != 3 {
		t.Errorf("the override did not reach the server: %+v %v", q, err)
	}

	// The usage page charts alice's days (her running containers count
	// today) and lists them, for an admin who names her.
	b.open("#/usage?owner=alice", `#usage-chart`)
	b.axe("usage")
	b.shot("usage")
	today := time.Now().UTC().Format(time.DateOnly)
	if bars, rows := b.eval(`String(document.querySelectorAll("#usage-chart rect").length)`), b.text("main tbody"); bars == "0" || !strings.Contains(rows, today) {
		t.Errorf("usage page: %s bars, rows %q, want bars and a row for %s", bars, rows, today)
	}
}

// TestConsoleLocalAdmin: on a berth serve with no tokens configured (what
// `make run` starts), the console asks for no sign-in and shows the local
// admin's containers, and the start-up output names the console's URL.
func TestConsoleLocalAdmin(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{noTokens: true, noImageRefresh: true})
	e.start()
	url := "http://" + e.addr + "/console"
	if !strings.Contains(e.out.String(), "  console:  "+url+"\n") {
		t.Errorf("start-up output does not name the console at %s:\n%s", url, e.out)
	}
	e.putTemplates()
	inst := e.instance(e.must(e.call("POST", "/api/containers", "", map[string]string{"template": "sleeper", "name": "quickstart"}), http.StatusAccepted))

	b := newBrowser(t, "http://"+e.addr)
	b.run("opening the console", 90*time.Second,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#containers a[href="#/containers/`+inst.ID+`"]`)))
	if s := b.text("#who"); !strings.Contains(s, "local admin") {
		t.Errorf("header says %q, want the local admin mode", s)
	}
	if n := b.eval(`String(document.querySelectorAll("input[name=token]").length)`); n != "0" {
		t.Errorf("a sign-in form is shown in local admin mode")
	}
}
