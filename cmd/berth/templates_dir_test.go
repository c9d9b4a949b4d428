package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestExampleTemplates: the templates `make run` loads
// (testdata/templates, with testdata/config.example.yml) pass the real
// template validation, and a user can create from each of them.
func TestExampleTemplates(t *testing.T) {
	cfg, err := config.Load("../../testdata/config.example.yml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := readTemplates("../../testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tpl := range tpls {
		names[tpl.Name] = true
	}
	if !names["busybox"] {
		t.Fatalf("testdata/templates has no busybox template (the README's quickstart uses it): %v", names)
	}
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		m := manager.New(manager.Options{Store: b.Open(t, time.Now), MaxPending: cfg.Container.CreateQueueMaxPending,
			Runtimes: cfg.Container.AllowedRuntimes, BindRoots: cfg.Docker.BindRoots(), WorkspaceRoot: cfg.Container.WorkspaceRoot,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx := context.Background()
		for _, tpl := range tpls {
			if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "berth-serve", Admin: true}, tpl); err != nil {
				t.Errorf("template %s: %v", tpl.Name, err)
				continue
			}
			res, err := m.CreateByTemplate(ctx, identity.Caller{User: "local", Admin: true},
				manager.CreateRequest{Template: tpl.Name, Name: "hello"}, nil, "req-"+tpl.Name)
			if err != nil {
				t.Errorf("create from %s: %v", tpl.Name, err)
				continue
			}
			if res.Instance.Spec.Env["BERTH_USER"] != "local" && tpl.Name == "busybox" {
				t.Errorf("busybox's $USERID did not resolve: env %v", res.Instance.Spec.Env)
			}
		}
	})
}
