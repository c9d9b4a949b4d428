package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// TestConsoleEndpoints: the instance page's endpoints panel names each port
// a running container publishes (port, protocol, address, via), links the
// tcp ones (http, https on 8443) and not the udp one, and the http link
// reaches what the container serves; once stopped the panel names none.
// axe-core checks the page with the panel.
func TestConsoleEndpoints(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, serveOptions{publishing: true, noImageRefresh: true})
	e.start()
	// busybox's httpd serves the container's / on 8080; 8443 and 5353
	// are published and not served (the panel only names them).
	e.must(e.call("PUT", "/api/templates/web", adminToken, container.Template{Runtime: "docker", Image: e.image,
		PullPolicy: container.PullNever,
		Command:    []string{"sh", "-c", `mkdir -p /tmp/www && echo console-endpoint-page > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`},
		Ports: []container.Port{{ContainerPort: 8080, Protocol: "tcp"}, {ContainerPort: 8443, Protocol: "tcp"},
			{ContainerPort: 5353, Protocol: "udp"}}}), http.StatusCreated)
	inst := e.instance(e.must(e.call("POST", "/api/containers", aliceToken, map[string]string{"template": "web", "name": "web-ports"}), http.StatusAccepted))
	e.waitFor(inst.ID, fsm.Running, time.Minute)

	b := newBrowser(t, "http://"+e.addr)
	b.signIn(aliceToken)
	b.open("#/containers/"+inst.ID, `#inst-status .s-running`)
	// The worker's report after the start brings the endpoints; the page
	// shows them without a reload.
	b.run("waiting for the endpoints", 90*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#endpoints tr[data-port="8080/tcp"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoints tr[data-port="8443/tcp"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoints tr[data-port="5353/udp"]`)))

	var got container.Instance
	e.until("the API's endpoints", 30*time.Second, func() bool {
		got = e.instance(e.must(e.call("GET", "/api/containers/"+inst.ID, aliceToken, nil), http.StatusOK))
		return len(got.Endpoints) == 3
	})
	for _, ep := range got.Endpoints {
		row := `#endpoints tr[data-port="` + strconv.Itoa(ep.Port) + "/" + ep.Protocol + `"]`
		text := b.text(row)
		for _, want := range []string{strconv.Itoa(ep.Port), ep.Protocol, ep.Address(), "the Docker host"} {
			if !strings.Contains(text, want) {
				t.Errorf("endpoint row %s reads %q, lacks %q", row, text, want)
			}
		}
		href := b.eval(`(document.querySelector('` + row + ` a') || {href: ""}).href`)
		var want string
		switch {
		case ep.Protocol != "tcp":
			want = ""
		case ep.Port == 8443:
			want = "https://" + ep.Address() + "/"
		default:
			want = "http://" + ep.Address() + "/"
		}
		if href != want {
			t.Errorf("endpoint %d/%s links %q, want %q", ep.Port, ep.Protocol, href, want)
		}
		if ep.Port != 8080 {
			continue
		}
		// The link reaches the container.
		var body string
		e.until("the http endpoint to answer", 30*time.Second, func() bool {
			resp, err := http.Get(href)
			if err != nil {
				return false
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK
		})
		if !strings.Contains(body, "console-endpoint-page") {
			t.Errorf("the 8080 link answers %q", body)
		}
	}
	b.axe("instance with endpoints")
	b.shot("instance-endpoints")
	b.narrow("instance-endpoints")

	e.must(e.call("POST", "/api/containers/"+inst.ID+"/stop", aliceToken, nil), http.StatusAccepted)
	b.run("the endpoints gone once stopped", 90*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#inst-status .s-stopped`)),
		poll(`!document.querySelector("#endpoints tr") && document.getElementById("endpoints").innerText.includes("None while it is not running")`))
}
