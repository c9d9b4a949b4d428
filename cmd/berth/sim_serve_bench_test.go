package main

import (
	"context"
	"testing"
	"time"

	mobycontainer "github.com/moby/moby/api/types/container"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// The platform's size BenchmarkSimServeScale runs `berth serve` at, and
// its baseline in the same run (BenchmarkServeScale's large size).
const (
	platformInstances = 100_000
	platformHosts     = 1000
	platformBaseline  = 10_000
)

// BenchmarkSimServeScale runs `berth serve` on a bolt store holding
// 100,000 running instances spread over 1,000 simulated Docker hosts, each
// instance's container running on its host (so the reconciler and the
// watcher, which run from the start, find the fleet as the store says),
// and on one holding 10,000 over 1,000 hosts as the baseline, in the same
// run; it reports measureServe's figures for both: start-up until /readyz
// (median of 5), RSS, and p50/p99 of the API's list pages and get.
func BenchmarkSimServeScale(b *testing.B) {
	s, l := measureSizes(b, platformBaseline, platformInstances, measureSimServe)
	b.ReportMetric(ms(median(l.startups)), "startup-100k-ms")
	b.ReportMetric(ms(median(s.startups)), "startup-10k-ms")
	b.ReportMetric(float64(median(l.startups))/float64(median(s.startups)), "startup-100k/10k")
	b.ReportMetric(float64(l.rssKB)/1024, "rss-100k-MiB")
	b.ReportMetric(float64(s.rssKB)/1024, "rss-10k-MiB")
	b.ReportMetric(float64(l.hwmKB)/1024, "hwm-100k-MiB")
	report := func(name string, small, large []time.Duration) {
		b.ReportMetric(ms(percentile(large, 50)), name+"-p50-ms")
		b.ReportMetric(ms(percentile(large, 99)), name+"-p99-ms")
		b.ReportMetric(float64(percentile(large, 99))/float64(percentile(small, 99)), name+"-p99-100k/10k")
	}
	report("list-admin", s.adminList, l.adminList)
	report("list-owner", s.ownerList, l.ownerList)
	report("list-status", s.statusList, l.statusList)
	report("get", s.get, l.get)
}

// measureSimServe is measureServe over a fleet of its own of
// platformHosts simulated hosts, with n running instances.
func measureSimServe(b *testing.B, n int) *serveAtScale {
	b.Helper()
	fleet, err := dockersim.New(dockersim.Options{Hosts: platformHosts, Images: []string{simImage}})
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.Close()
	o := serveOptions{noImageRefresh: true, simHosts: fleet.DockerHosts(config.DockerHost{})}
	return measureServeFilled(b, n, o, fsm.Failed, func(e *serveEnv, st *boltstore.Store, i int) string {
		return scaleFillRunning(b, st, scaleOwner(i), e.scope, fleet.Hosts()[i%platformHosts])
	})
}

// scaleFillRunning is one running instance as the local server leaves it
// (pending → creating → running through the store's own writes, the create
// outbox item done), its container running on host with berth's labels of
// scope.
func scaleFillRunning(tb testing.TB, st *boltstore.Store, owner, scope string, host *dockersim.Host) string {
	tb.Helper()
	ctx := context.Background()
	obID := container.NewID()
	in, err := st.CreateInstance(ctx, store.CreateParams{
		Instance: container.Instance{ID: container.NewID(), Name: "job", Owner: owner, Template: "sleeper",
			Labels: map[string]string{"team": owner}, Runtime: container.RuntimeDocker, Image: simImage,
			Spec: container.Spec{Runtime: container.RuntimeDocker, Image: simImage, Command: []string{"run"}}},
		Outbox: container.OutboxItem{ID: obID, Op: container.OpCreate},
		Event:  container.Event{Type: container.EventCreateRequested, To: fsm.Pending, Actor: owner},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.MarkDispatched(ctx, obID, time.Time{}); err != nil {
		tb.Fatal(err)
	}
	runtimeID, err := host.Run(runtime.ObjectName(in.ID), mobycontainer.Config{Image: simImage, Labels: runtime.Labels(in, scope)})
	if err != nil {
		tb.Fatal(err)
	}
	steps := []store.TransitionParams{
		{From: fsm.Pending, To: fsm.Creating,
			Event: &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating, Actor: container.ActorSystem}},
		{From: fsm.Creating, To: fsm.Running, CompleteOutboxID: obID,
			Update: func(i *container.Instance) {
				now := time.Now().UTC()
				i.RuntimeID, i.RuntimeNodeName, i.StartedAt = runtimeID, host.Name(), &now
			},
			Event: &container.Event{Type: container.EventStarted, From: fsm.Creating, To: fsm.Running, Actor: container.ActorSystem}},
	}
	if _, err := scaleSteps(st, in, steps); err != nil {
		tb.Fatal(err)
	}
	return in.ID
}
