package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/testenv"
)

// BenchmarkCreateToRunning compares, in one run on one engine, berth's
// create → running (POST, then the API's wait) with a bare `docker run -d`
// of the same image (the Engine API's create + start, which is what the
// docker CLI sends). It reports both medians and their ratio (goal ≤ 1.2).
func BenchmarkCreateToRunning(b *testing.B) {
	e := newServeEnv(b, serveOptions{})
	e.start()
	e.must(e.call("PUT", "/api/templates/sleeper", adminToken, berth.Template{Runtime: "docker", Image: e.image,
		PullPolicy: berth.PullNever, Command: []string{"sleep", "3600"}}), http.StatusCreated)
	cli := e.engine.Client("local")
	ctx := context.Background()
	var bare []string
	b.Cleanup(func() {
		for _, id := range bare {
			_, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		}
	})
	var berthTimes, bareTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		in := e.create("sleeper")
		e.waitFor(in.ID, fsm.Running, time.Minute)
		berthTimes = append(berthTimes, time.Since(start))

		start = time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: e.image, Cmd: []string{"sleep", "3600"}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		bareTimes = append(bareTimes, time.Since(start))
		bare = append(bare, created.ID)
	}
	b.StopTimer()
	mb, md := median(berthTimes), median(bareTimes)
	b.ReportMetric(float64(mb.Milliseconds()), "berth-ms")
	b.ReportMetric(float64(md.Milliseconds()), "docker-run-ms")
	b.ReportMetric(float64(mb)/float64(md), "berth/docker-run")
}

// BenchmarkBurst fires N creates at once with max concurrency 3 and
// compares the time until all run with a bare client burst in the same run:
// the same N create + start calls through the raw Engine API client from a
// pool of 3 goroutines (goal berth/bare ≤ 1.1). The engine itself does not
// scale with concurrency on a small machine, so N / 3 × one create (the
// median single create → running, measured first) is reported too, as
// ideal-ms, but it is not the baseline. Each iteration runs burstRounds
// pairs, alternating which of the two goes first, so that machine noise
// hits both; the figures are medians over every round. Both talk to the
// engine through the same counting relay (engineCounter), which reports the
// Engine API calls each makes per container: where berth's extra time goes.
func BenchmarkBurst(b *testing.B) {
	const n, concurrency, burstRounds = 30, 3, 3
	counter := newEngineCounter(b, testenv.DockerHost(b))
	e := newServeEnv(b, serveOptions{maxConcurrency: concurrency, maxPending: n, dockerEndpoint: counter.endpoint()})
	e.start()
	e.must(e.call("PUT", "/api/templates/sleeper", adminToken, berth.Template{Runtime: "docker", Image: e.image,
		PullPolicy: berth.PullNever, Command: []string{"sleep", "3600"}}), http.StatusCreated)
	var singles []time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		e.waitFor(e.create("sleeper").ID, fsm.Running, time.Minute)
		singles = append(singles, time.Since(start))
	}
	one := median(singles)
	cli, err := client.New(client.WithHost(counter.endpoint()))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	var berthTimes, bareTimes []time.Duration
	var berthCalls, bareCalls int
	berth := func() {
		counter.take()
		berthTimes = append(berthTimes, berthBurst(b, e, n, func() { berthCalls += total(counter.take()) }))
	}
	bare := func() {
		counter.take()
		bareTimes = append(bareTimes, bareBurst(b, cli, e.image, n, concurrency, func() { bareCalls += total(counter.take()) }))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < burstRounds; r++ {
			if r%2 == 0 {
				berth()
				bare()
			} else {
				bare()
				berth()
			}
		}
	}
	b.StopTimer()
	made := float64(b.N * burstRounds * n)
	b.ReportMetric(float64(berthCalls)/made, "berth-engine-calls/container")
	b.ReportMetric(float64(bareCalls)/made, "bare-engine-calls/container")
	ideal := time.Duration(float64(one) * n / concurrency)
	berthMed, bareMed := median(berthTimes), median(bareTimes)
	b.ReportMetric(float64(berthMed.Milliseconds()), "berth-burst-ms")
	b.ReportMetric(float64(bareMed.Milliseconds()), "bare-burst-ms")
	b.ReportMetric(float64(berthMed)/float64(bareMed), "berth/bare")
	b.ReportMetric(float64(ideal.Milliseconds()), "ideal-ms")
	b.ReportMetric(float64(berthMed)/float64(ideal), "berth/ideal")
	b.ReportMetric(float64(bareMed)/float64(ideal), "bare/ideal")
}

// berthBurst posts n creates at once and returns the time until all run;
// running is called then, before it deletes them, outside the time
// measured (the benchmark timer is stopped around the clean-up).
func berthBurst(b *testing.B, e *serveEnv, n int, running func()) time.Duration {
	b.Helper()
	start := time.Now()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for j := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); ids[j] = e.create("sleeper").ID }()
	}
	wg.Wait()
	for _, id := range ids {
		e.waitFor(id, fsm.Running, 5*time.Minute)
	}
	took := time.Since(start)
	running()
	b.StopTimer()
	defer b.StartTimer()
	for _, id := range ids {
		e.must(e.call("DELETE", "/api/containers/"+id, aliceToken, nil), http.StatusAccepted)
	}
	for _, id := range ids {
		for e.call("GET", "/api/containers/"+id, aliceToken, nil).status != http.StatusNotFound {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return took
}

// bareBurst makes n containers with the raw Engine API client — create then
// start, what `docker run -d` sends — from a pool of concurrency
// goroutines, and returns the time until every start has returned (the
// container is running then). running is called then; it removes them
// afterwards, untimed.
func bareBurst(b *testing.B, cli *client.Client, image string, n, concurrency int, running func()) time.Duration {
	b.Helper()
	ctx := context.Background()
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	ids := make(chan string, n)
	errs := make(chan error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
					Config:     &container.Config{Image: image, Cmd: []string{"sleep", "3600"}},
					HostConfig: &container.HostConfig{NetworkMode: "none"},
				})
				if err != nil {
					errs <- fmt.Errorf("bare create: %w", err)
					continue
				}
				ids <- created.ID
				if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
					errs <- fmt.Errorf("bare start %s: %w", created.ID, err)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	running()
	close(ids)
	close(errs)
	b.StopTimer()
	defer b.StartTimer()
	for id := range ids {
		if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			b.Errorf("removing bare container %s: %v", id, err)
		}
	}
	for err := range errs {
		b.Fatal(err)
	}
	return took
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkKubernetesCreateToRunning compares, in one run on the test
// cluster (real kube-apiserver, scheduler, kwok node), berth's create →
// running (POST, then the API's wait) with a bare client-go Pod create and
// a watch until the Pod is Running. It reports both medians and their ratio
// (goal ≤ 1.1).
func BenchmarkKubernetesCreateToRunning(b *testing.B) {
	e := newServeEnv(b, serveOptions{kubernetes: true})
	e.start()
	e.putKubeTemplates()
	ctx := context.Background()
	cs, ns, err := e.kube.Clientset(ctx, "k1")
	if err != nil {
		b.Fatal(err)
	}
	pods := cs.CoreV1().Pods(ns)
	var bare []string
	b.Cleanup(func() {
		for _, name := range bare {
			_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
	})
	var berthTimes, bareTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		in := e.create("k-sleeper")
		e.waitFor(in.ID, fsm.Running, time.Minute)
		berthTimes = append(berthTimes, time.Since(start))

		name := "bare-" + strings.ToLower(berth.NewID())
		start = time.Now()
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "main", Image: kubeImage, Command: []string{"sleep", "infinity"}}}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, name)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
				break
			}
		}
		w.Stop()
		bareTimes = append(bareTimes, time.Since(start))
	}
	b.StopTimer()
	mb, md := median(berthTimes), median(bareTimes)
	// Fractions of a millisecond: both medians are a few ms on kwok.
	b.ReportMetric(float64(mb)/float64(time.Millisecond), "berth-ms")
	b.ReportMetric(float64(md)/float64(time.Millisecond), "client-go-ms")
	b.ReportMetric(float64(mb)/float64(md), "berth/client-go")
}
