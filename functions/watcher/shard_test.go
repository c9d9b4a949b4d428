package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetshard"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestHandleShard: under 3 shards each configured node is watched by
// exactly one shard's invocation, the one that owns it; only the leading
// shard holds the lifetimes' timers; each Report names its shard and only
// its nodes; a shard not of its count is refused. The hosts' engines are
// absent: each node is reported unavailable, which costs no other.
func TestHandleShard(t *testing.T) {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := config.Default()
	for i := range 12 {
		cfg.Docker.Hosts = append(cfg.Docker.Hosts, config.DockerHost{Name: fmt.Sprintf("h%d", i), Endpoint: "unix:///run/berth-test/none.sock"})
	}
	nodes, err := configured.ByNode(cfg, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := newFunction(cfg, teststores.Dynamo(t, time.Now), nodes, nil, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if fn.forShard(fleetshard.Whole()) != fn {
		t.Fatal("the whole shard is not the function")
	}
	watched := map[string]int{}
	for _, s := range fleetshard.All(3) {
		if timers := fn.forShard(s).expirer != nil; timers != s.Leads() {
			t.Errorf("shard %v (leads %v) holds timers: %v", s, s.Leads(), timers)
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadlineMargin+time.Second)
		rep, err := fn.handleShard(ctx, s)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Shard != s.Index || rep.Shards != 3 {
			t.Errorf("report of shard %v says %d/%d", s, rep.Shard, rep.Shards)
		}
		for _, nr := range rep.Nodes {
			if !s.OwnsNode(nr.Kind, nr.Node) || nr.Unavailable == "" {
				t.Errorf("shard %v watched %s/%s (unavailable %q)", s, nr.Kind, nr.Node, nr.Unavailable)
			}
			watched[nr.Node]++
		}
	}
	for _, h := range cfg.Docker.Hosts {
		if watched[h.Name] != 1 {
			t.Errorf("host %s watched by %d shards: %v", h.Name, watched[h.Name], watched)
		}
	}
	if _, err := fn.handleShard(context.Background(), fleetshard.Shard{Index: 3, Count: 3}); err == nil {
		t.Error("shard 3 of 3 was watched")
	}
	if got := shardNodes(nodes, fleetshard.Whole()); !slices.EqualFunc(got, nodes, func(a, b configured.Node) bool { return a.Name == b.Name }) {
		t.Error("the whole shard does not hold every node")
	}
}
