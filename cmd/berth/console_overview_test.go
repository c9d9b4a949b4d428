package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/httpapi"
)

// TestConsoleOverview: the admin's overview page draws GET /metrics of a
// real berth serve that created containers on the real engine: the tiles
// say what a scrape says (creates accepted, the admission limit, creates
// done), the charts gain a reading at each refresh, and axe finds no
// serious violation, at the desktop width and at 360 px. A user sees no
// link to it, and opening it says the API's 403.
func TestConsoleOverview(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{noImageRefresh: true, maxPending: 7})
	e.start()
	e.putTemplates()
	const n = 2
	for range n {
		e.waitFor(e.create("sleeper").ID, fsm.Running, 2*time.Minute)
	}

	b := newBrowser(t, "http://"+e.addr)
	b.signIn(aliceToken)
	if hidden := b.eval(`String(document.getElementById("nav-overview").hidden)`); hidden != "true" {
		t.Error("a user is offered the overview")
	}
	b.open("#/overview", `#overview-note`)
	b.run("a user's overview", 30*time.Second, poll(`document.getElementById("overview-note").innerText.includes("403")`))

	b.run("signing out", 30*time.Second, chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
	b.signIn(adminToken)
	b.run("the admin's link", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/overview"]`)))
	b.open("#/overview", `#m-accepted`)
	// The creates are measured once done, after running: the page's
	// refreshes bring the count in.
	b.run("the creates measured", time.Minute,
		poll(fmt.Sprintf(`Number((document.getElementById("m-berth_create_duration_seconds_count") || {}).innerText) >= %d`, n)))
	// Two readings at least: each chart has drawn a line.
	b.run("a second reading", 30*time.Second,
		poll(`document.querySelectorAll("#ov-queued polyline").length === 1 && /([2-9]|\d\d) reading/.test(document.getElementById("overview-note").innerText)`))

	mfs := e.scrape(adminToken)
	accepted := sum(mfs["berth_http_requests_total"], map[string]string{"route": "/api/containers", "method": "POST", "code": "202"})
	if got := b.text("#m-accepted"); got != strconv.Itoa(int(accepted)) || accepted != n {
		t.Errorf("creates accepted: the page says %q, a scrape %v, want %d", got, accepted, n)
	}
	if got := b.text("#m-berth_admission_limit"); got != "7" {
		t.Errorf("admission limit tile %q, want 7 (create_queue_max_pending)", got)
	}
	if got := b.text("#ov-admission + figcaption"); !strings.HasSuffix(got, " of 7") {
		t.Errorf("admission chart %q, want … of 7", got)
	}
	if got := b.text("#m-latency"); !strings.HasPrefix(got, "≤ ") {
		t.Errorf("create → running tile %q, want the p50 and p99 bounds", got)
	}
	for _, id := range []string{"#m-berth_queue_dead_letters", "#m-berth_watcher_events_total", "#ov-admission", "#ov-rps"} {
		if b.eval(fmt.Sprintf(`String(!!document.querySelector(%q))`, id)) != "true" {
			t.Errorf("the overview draws no %s", id)
		}
	}
	if got := b.text("h1"); got != "Overview" {
		t.Errorf("heading %q", got)
	}
	b.axe("overview")
	b.shot("overview")
	b.narrow("overview")
	// The route it reads is the one documented.
	if httpapi.MetricsPath != "/metrics" {
		t.Fatalf("MetricsPath %q", httpapi.MetricsPath)
	}
}
