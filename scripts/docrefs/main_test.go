package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"internal/manager/onevent.go":     "package manager\n\ntype Manager struct{}\n\nfunc (m *Manager) OnEvent() {}\n\nconst DefaultX = 1\n",
		"internal/store/dynamostore/s.go": "package dynamostore\n\nimport \"net/http\"\n\nvar IndexShards = 16\n\nvar _ http.Client\n",
		"cmd/berth/serve.go":              "package main\n",
		"scripts/testenv/kubernetes.sh":   "#!/bin/sh\n",
		"docs/other.md":                   "# Other\n\n## Hot index keys\n\n<a id=\"kept\"></a>\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		line string
		want string // a substring of the one problem, "" for none
	}{
		{"see `internal/manager/onevent.go`.", ""},
		{"see internal/manager/onevent.go:67, and cmd/berth/serve.go#L3", ""},
		{"`make bench PKGS=./cmd/berth` and scripts/testenv/kubernetes.sh up", ""},
		{"github.com/berth-io/berth/internal/store/dynamostore", ""},
		{"functions/<fn>/ and internal/*/x.go and dist/api/bootstrap and infra/cdk.out/", ""},
		{"create/start, p50/p99, GET api/containers, /var/run/docker.sock", ""},
		{"manager/onevent.go and dynamostore/s.go", ""},
		{"manager.OnEvent, manager.Manager.OnEvent, dynamostore.IndexShards, http.Client, t.Parallel", ""},
		{"[x](other.md#hot-index-keys), [y](other.md#kept), [z](#a-heading)", ""},
		{"internal/manager/gone.go", "internal/manager/gone.go: no such file"},
		{"(`internal/lambdaenv`).", "internal/lambdaenv: no such file"},
		{"functions/watcher,", "functions/watcher: no such file"},
		{"manager/gone.go", "manager/gone.go: no such file (tried manager/gone.go, internal/manager/gone.go)"},
		{"manager.Gone", "manager.Gone: no top-level Gone in internal/manager"},
		{"lambdaenv.Generation", "lambdaenv.Generation: no package lambdaenv"},
		{"[x](other.md#no-such)", "docs/other.md#no-such: no such section"},
		{"[x](gone.md)", "docs/gone.md: link to nothing"},
		{"[x](#nowhere)", "docs/doc.md#nowhere: no such section"},
	} {
		doc := "# A heading\n\n" + tc.line + "\n"
		if err := os.WriteFile(filepath.Join(root, "docs", "doc.md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		problems, err := check(root)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%q: want no problem, got %q", tc.line, problems)
		case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
			t.Errorf("%q: want one problem with %q, got %q", tc.line, tc.want, problems)
		case tc.want != "" && !strings.HasPrefix(problems[0], "docs/doc.md:3: "):
			t.Errorf("%q: want the doc and line first, got %q", tc.line, problems[0])
		}
	}
}
