package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestTemplateValidation: what a create (or the engine) would fail on is
// refused when the template is written, with a 422 naming the field.
func TestTemplateValidation(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("Refused", func(t *testing.T) { testTemplateRefused(t, newAPI(t, b, 50)) })
		t.Run("BindNestingAtCreate", func(t *testing.T) { testBindNestingAtCreate(t, newAPI(t, b, 50)) })
		t.Run("VariableValuesAtCreate", func(t *testing.T) { testVariableValuesAtCreate(t, newAPI(t, b, 50)) })
	})
}

func testTemplateRefused(t *testing.T, a *api) {
	const d = `"runtime":"docker","image":"x"`
	cases := []struct{ name, body, field string }{
		{"target /", `{` + d + `,"volumes":[{"source":"v1","target":"/","type":"volume"}]}`, "volumes[0].target"},
		{"target / uncleaned", `{` + d + `,"volumes":[{"type":"empty_dir","target":"/tmp/.."}]}`, "volumes[0].target"},
		{"volume named ..", `{` + d + `,"volumes":[{"source":"..","target":"/v","type":"volume"}]}`, "volumes[0].source"},
		{"volume name with a space", `{` + d + `,"volumes":[{"source":"a b","target":"/v","type":"volume"}]}`, "volumes[0].source"},
		{"two volumes on one target", `{` + d + `,"volumes":[{"type":"empty_dir","target":"/v"},{"type":"empty_dir","target":"/v/"}]}`, "volumes[1].target"},
		{"persist on a bind", `{` + d + `,"volumes":[{"source":"/srv/berth/$USERID/p","target":"/v","type":"bind","read_only":true,"persist":true}]}`, "volumes[0].persist"},
		{"shared volume keyed by the container's name", `{` + d + `,"volumes":[{"source":"$CONTAINER_NAME","target":"/v","type":"volume","shared":true}]}`, "volumes[0].source"},
		{"shared volume of the scoped form", `{` + d + `,"volumes":[{"source":"data-u0123456789ab","target":"/v","type":"volume","shared":true}]}`, "volumes[0].source"},
		{"shared empty_dir", `{` + d + `,"volumes":[{"type":"empty_dir","target":"/v","shared":true}]}`, "volumes[0].shared"},
		{"NUL in workdir", `{` + d + `,"workdir":"/a\u0000b"}`, "workdir"},
		{"relative workdir", `{` + d + `,"workdir":"a/b"}`, "workdir"},
		{"NUL in command", `{` + d + `,"command":["sh","a\u0000b"]}`, "command[1]"},
		{"NUL in args", `{` + d + `,"args":["a\u0000b"]}`, "args[0]"},
		{"NUL in image", `{"runtime":"docker","image":"busybox\u0000"}`, "image"},
		{"colon in bind source", `{` + d + `,"volumes":[{"source":"/srv/berth/a:b","target":"/v","type":"bind"}]}`, "volumes[0].source"},
		{"comma in bind source", `{` + d + `,"volumes":[{"source":"/srv/berth/a,b","target":"/v","type":"bind"}]}`, "volumes[0].source"},
		{"colon in target", `{` + d + `,"volumes":[{"source":"v1","target":"/v:ro","type":"volume"}]}`, "volumes[0].target"},
		{"upper-case image", `{"runtime":"docker","image":"Busybox"}`, "image"},
		{"upper-case image via variable", `{"runtime":"docker","image":"team/App-$USERID"}`, "image"},
		{"malformed digest", `{"runtime":"docker","image":"busybox@sha256:abc"}`, "image"},
		{"empty tag", `{"runtime":"docker","image":"busybox:"}`, "image"},
		{"cpu 1n", `{` + d + `,"resources":{"cpu":"1n"}}`, "resources.cpu"},
		{"cpu 1e18", `{` + d + `,"resources":{"cpu":"1e18"}}`, "resources.cpu"},
		{"memory 9Ei", `{` + d + `,"resources":{"memory":"9Ei"}}`, "resources.memory"},
		{"docker node_selector", `{` + d + `,"scheduling":{"node_selector":{"disk":"ssd"}}}`, "scheduling.node_selector"},
		{"docker tolerations", `{` + d + `,"scheduling":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}`, "scheduling.tolerations"},
		{"docker constraints", `{` + d + `,"scheduling":{"constraints":[{"key":"zone","operator":"In","values":["a"]}]}}`, "scheduling.constraints"},
		{"docker pvc", `{` + d + `,"volumes":[{"source":"claim","target":"/v","type":"pvc"}]}`, "volumes[0].type"},
		// newAPI's busybox template mounts /srv/berth/$USERID writable.
		{"bind below another template's writable bind", `{` + d + `,"volumes":[{"source":"/srv/berth/$USERID/$CONTAINER_NAME","target":"/data","type":"bind"}]}`, "volumes[0].source"},
		{"bind that a variable may put below it", `{` + d + `,"volumes":[{"source":"/srv/berth/shared/x","target":"/data","type":"bind","read_only":true}]}`, "volumes[0].source"},
		{"writable root above another template's bind", `{` + d + `,"volumes":[{"source":"/srv/berth","target":"/all","type":"bind"}]}`, "volumes[0].source"},
		{"writable bind above its own other bind", `{` + d + `,"volumes":[{"source":"/srv/berth/t/$USERID","target":"/home","type":"bind"},{"source":"/srv/berth/t/$USERID/$CONTAINER_NAME","target":"/data","type":"bind"}]}`, "volumes[0].source"},
		{"$WORKSPACE_PATH below another template's writable bind", `{` + d + `,"volumes":[{"source":"$WORKSPACE_PATH","target":"/w","type":"bind"}]}`, "volumes[0].source"},
		{"a variable as a whole path elsewhere", `{` + d + `,"volumes":[{"source":"/srv/berth/$WORKSPACE_PATH","target":"/w","type":"bind"}]}`, "volumes[0].source"},
	}
	for _, tc := range cases {
		r := a.do("PUT", "/api/templates/t2", admin, tc.body, nil)
		if r.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422: %s", tc.name, r.Code, r.Body)
			continue
		}
		if !problemNames(r, tc.field) {
			t.Errorf("%s: problem does not name field %q: %s", tc.name, tc.field, r.Body)
		}
	}
	// Replacing the template itself is not a conflict with its old
	// version. Making its bind read-only does not make room below it: its
	// containers could already have planted links there (issue 22,
	// reproduction 1), so the 422 advises moving or retiring, never
	// read_only.
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, busyboxTemplate, nil), http.StatusOK)
	a.mustStatus(a.do("PUT", "/api/templates/busybox", admin, strings.Replace(busyboxTemplate, `"type":"bind"`, `"type":"bind","read_only":true`, 1), nil), http.StatusOK)
	r := a.do("PUT", "/api/templates/ok-workspace", admin, `{"runtime":"docker","image":"x","volumes":[{"source":"$WORKSPACE_PATH","target":"/w","type":"bind"}]}`, nil)
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "/api/bind-ledger/") || strings.Contains(r.Body.String(), "read_only") {
		t.Errorf("$WORKSPACE_PATH below a once-writable bind: status %d, want 422 naming the retire route and not read_only: %s", r.Code, r.Body)
	}
	for name, body := range map[string]string{
		"digest":    `{"runtime":"docker","image":"registry.example.com:5000/team/app:1.2@sha256:` + sha + `"}`,
		"bounds":    `{"runtime":"docker","image":"x","resources":{"cpu":"1m","memory":"4Mi"}}`,
		"read-only": `{"runtime":"docker","image":"x","volumes":[{"source":"/srv/berth/$USERID","target":"/r","type":"bind","read_only":true}]}`,
	} {
		if r := a.do("PUT", "/api/templates/ok-"+name, admin, body, nil); r.Code != http.StatusCreated {
			t.Errorf("%s: status %d, want 201: %s", name, r.Code, r.Body)
		}
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testBindNestingAtCreate: templates stored before the rule (or by two
// racing writes) that together let one container redirect another's bind
// mount are refused at create, not half-applied.
func testBindNestingAtCreate(t *testing.T, a *api) {
	ctx := context.Background()
	evil := container.Template{Name: "evil", Runtime: "docker", Image: "x", PullPolicy: container.PullIfNotPresent,
		Volumes: []container.Volume{{Type: container.VolumeBind, Source: "/srv/berth/$USERID/$CONTAINER_NAME", Target: "/data"}}}
	if _, _, err := a.store.PutTemplate(ctx, evil); err != nil { // straight to the store: no manager checks
		t.Fatal(err)
	}
	for _, tpl := range []string{"evil", "busybox"} {
		r := a.do("POST", "/api/containers", alice, `{"template":"`+tpl+`"}`, nil)
		if r.Code != http.StatusUnprocessableEntity || !problemNames(r, "volumes[0].source") {
			t.Errorf("create from %s: status %d, want 422 naming volumes[0].source: %s", tpl, r.Code, r.Body)
		}
	}
}

// testVariableValuesAtCreate: a value that would not be one path element
// in a bind source is refused at create.
func testVariableValuesAtCreate(t *testing.T, a *api) {
	for _, user := range []string{"a/b", "..", "."} {
		_, err := a.m.CreateByTemplate(context.Background(), identity.Caller{User: user},
			manager.CreateRequest{Template: "busybox"}, nil, "req")
		var ve *manager.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) == 0 || ve.Fields[0].Field != "volumes[0].source" {
			t.Errorf("user %q: err = %v, want a validation error on volumes[0].source", user, err)
		}
	}
}
