package emulate_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/testenv"
)

// BenchmarkExitNoticed measures, side by side in one run on the same Docker
// engine, how long after a container ends behind berth's back the API
// reports it: through the emulated AWS stack, where the watcher function
// carries the engine's events (the reconciler's schedule is off, so
// nothing else could), and through `berth serve`'s state loop. Two ways
// to end: the container is killed (its exit), and it is removed by force
// (docker rm -f). The lag runs from the exit as the engine stamped it
// (the instance's finished_at) to the moment the API's wait answers
// failed. Goal (issue 25): the emulated median within 1 s of serve's, and
// its p99 at most 5 s.
//
//	make bench BENCH=ExitNoticed PKGS=./internal/emulate BENCHTIME=20x
func BenchmarkExitNoticed(b *testing.B) {
	em := start(b, setup{watcher: true, schedules: noReconciler})
	serve := startServe(b)
	serveRT, err := docker.New(config.Docker{Scope: "bench-serve", Hosts: []config.DockerHost{{Name: "local", Endpoint: testenv.DockerHost(b), NetworkMode: "none"}}},
		docker.Options{Scope: "bench-serve", Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer serveRT.Close()
	ends := []struct {
		name string
		end  func(ctx context.Context, rt *docker.Runtime, ref runtime.Ref) error
	}{
		{"exit", func(ctx context.Context, rt *docker.Runtime, ref runtime.Ref) error { return rt.Stop(ctx, ref, 0) }},
		{"removal", func(ctx context.Context, rt *docker.Runtime, ref runtime.Ref) error { return rt.Delete(ctx, ref) }},
	}
	sides := []struct {
		name string
		st   *stack
		rt   *docker.Runtime
	}{{"emulate", em, em.rt}, {"serve", serve, serveRT}}
	lags := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for _, e := range ends {
			for _, side := range sides {
				id := side.st.create(aliceToken, "busybox", "")
				side.st.wait(aliceToken, id, "running", time.Minute)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := e.end(ctx, side.rt, runtime.Ref{InstanceID: id, Node: "local"})
				cancel()
				if err != nil {
					b.Fatalf("%s %d on %s: %v", e.name, i, side.name, err)
				}
				in := side.st.wait(aliceToken, id, "failed", time.Minute)
				noticed := time.Now()
				finished, err := time.Parse(time.RFC3339Nano, in["finished_at"].(string))
				if err != nil {
					b.Fatalf("%s %d on %s: finished_at %v", e.name, i, side.name, in["finished_at"])
				}
				lags[side.name+"-"+e.name] = append(lags[side.name+"-"+e.name], noticed.Sub(finished))
				if r := side.st.do(http.MethodDelete, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusAccepted {
					b.Fatalf("delete %d on %s: %d %s", i, side.name, r.status, r.body)
				}
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, e := range ends {
		var p50 [2]time.Duration
		for j, side := range sides {
			l := lags[side.name+"-"+e.name]
			slices.Sort(l)
			p50[j] = l[len(l)/2]
			b.ReportMetric(ms(p50[j]), side.name+"-"+e.name+"-p50-ms")
			b.ReportMetric(ms(l[(len(l)*99)/100]), side.name+"-"+e.name+"-p99-ms")
		}
		b.ReportMetric(ms(p50[0]-p50[1]), e.name+"-p50-diff-ms")
	}
}
