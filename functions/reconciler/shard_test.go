package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestHandleShard: an invocation for one shard of two builds its runtimes
// over that shard's host only: the shard that owns the host of a creating
// instance whose container runs brings it to running, the other examines
// nothing and leaves the fleet-wide steps to the leader; the Report names
// the shard; a shard not of its count is refused.
func TestHandleShard(t *testing.T) {
	st := teststores.Dynamo(t, time.Now)
	image := testenv.TestImage(t)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	scope := "rcfn-shard-" + strings.ToLower(container.NewID())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Two names of the real engine in different shards of 2.
	var hosts []string
	for i := 0; len(hosts) < 2; i++ {
		h := fmt.Sprintf("host-%d", i)
		if len(hosts) == 0 || fleetshard.BucketOf("docker", h)%2 != fleetshard.BucketOf("docker", hosts[0])%2 {
			hosts = append(hosts, h)
		}
	}
	cfg := config.Default()
	cfg.Docker.Scope = scope
	cfg.Docker.Hosts = []config.DockerHost{{Name: hosts[0], Endpoint: testenv.DockerHost(t), NetworkMode: "none"},
		{Name: hosts[1], Endpoint: testenv.DockerHost2(t), NetworkMode: "none"}}
	all, err := configured.Build(cfg, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		states, _ := all.Docker.List(context.Background())
		for _, s := range states {
			_ = all.Docker.Delete(context.Background(), s.Ref)
		}
		all.Close()
	})
	fn, err := newFunction(cfg, st, all.All(), nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}

	m := manager.New(manager.Options{Store: st, Logger: quiet})
	if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: "sleeper",
		Runtime: "docker", Image: image, PullPolicy: container.PullNever, Command: []string{"sh", "-c", "sleep 3600"}}); err != nil {
		t.Fatal(err)
	}
	res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "sleeper"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := st.Transition(ctx, store.TransitionParams{ID: res.Instance.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
		Update: func(i *container.Instance) { i.RuntimeNodeName = hosts[0] }})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := all.Docker.Create(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := all.Docker.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}

	for _, s := range fleetshard.All(2) {
		rep, err := fn.handleShard(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		owns := s.OwnsNode("docker", hosts[0])
		if (rep.Started == 1) != owns || (rep.Instances == 1) != owns || rep.Errors != 0 {
			t.Errorf("shard %v (owns %s: %v): %+v", s, hosts[0], owns, rep)
		}
		out, _ := json.Marshal(rep)
		if want := fmt.Sprintf(`"shard":%d,"shards":2`, s.Index); !strings.Contains(string(out), want) {
			t.Errorf("result %s lacks %s", out, want)
		}
		// The creating instance holds a create slot: the leader's repair counts it.
		if s.Leads() != (rep.AdmissionAfter == 1) {
			t.Errorf("shard %v (leads %v): admission %d → %d", s, s.Leads(), rep.AdmissionBefore, rep.AdmissionAfter)
		}
	}
	if got, _ := st.GetInstance(ctx, inst.ID); got.Status != fsm.Running {
		t.Errorf("instance %s, want running", got.Status)
	}
	if _, err := fn.handleShard(ctx, fleetshard.Shard{Index: 2, Count: 2}); err == nil {
		t.Error("shard 2 of 2 was run")
	}
}
