package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// BenchmarkCreateStart compares runtime Create+Start with a bare Engine API
// create+start of the same image, command, env and labels on the same engine.
// The two alternate within each iteration (and swap order every other one)
// so that engine drift hits both alike; cleanup is outside the timings.
// Reported: ms per create+start for each, and the ratio runtime/bare (goal
// ≤ 1.05). Run with e.g. `go test -run ^$ -bench CreateStart -benchtime 20x`.
func BenchmarkCreateStart(b *testing.B) {
	e := newEngine(b)
	cli := e.Client("h1")
	ctx := context.Background()
	var bare, rt time.Duration

	runBare := func() string {
		inst := e.instance("sleep 60")
		labels := map[string]string{"bench": "bare"}
		for k, v := range inst.Spec.Labels {
			labels[k] = v
		}
		start := time.Now()
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: "bench-" + strings.ToLower(inst.ID),
			Config: &container.Config{
				Image: e.image, Entrypoint: inst.Spec.Command, Env: []string{"SECRET_TOKEN=x"}, Labels: labels,
			},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(start)
		return res.ID
	}
	runRuntime := func() berth.Instance {
		inst := e.instance("sleep 60")
		start := time.Now()
		ref, err := e.Create(ctx, inst)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx, ref); err != nil {
			b.Fatal(err)
		}
		rt += time.Since(start)
		inst.RuntimeNodeName = ref.Node
		return inst
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var id string
		var inst berth.Instance
		if i%2 == 0 {
			id, inst = runBare(), runRuntime()
		} else {
			inst, id = runRuntime(), runBare()
		}
		b.StopTimer()
		if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		if err := e.Delete(ctx, runtime.RefOf(inst)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(bare.Milliseconds())/float64(b.N), "bare-ms/op")
	b.ReportMetric(float64(rt.Milliseconds())/float64(b.N), "runtime-ms/op")
	b.ReportMetric(float64(rt)/float64(bare), "runtime/bare")
}

// BenchmarkPlace is the fixed part of what Create adds to a bare create:
// listing berth's containers on the host for load and adoption. (The image
// check is one more inspect of about the same cost.)
func BenchmarkPlace(b *testing.B) {
	e := newEngine(b)
	ctx := context.Background()
	inst := e.instance("true")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Place(ctx, inst); err != nil {
			b.Fatal(err)
		}
	}
}
