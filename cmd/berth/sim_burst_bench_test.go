package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime/docker/dockersim"
)

// The create burst at a platform's size: burstCreates creates at once
// through `berth serve` over burstHosts simulated hosts, burstConcurrency
// at a time (create_queue_max_concurrency, and the bare burst's pool).
const (
	burstCreates     = 3000
	burstHosts       = 1000
	burstConcurrency = 16
	// burstClients is how many API clients post the creates at once.
	burstClients = 64
)

// BenchmarkSimBurst fires 3,000 creates at once at `berth serve` (bolt)
// configured with 1,000 simulated Docker hosts (dockersim) and measures,
// from the instances' own times, creates/s (until the last is running)
// and the p50/p99 of create → running (created_at to the running
// transition's updated_at); then, in the same run, the same 3,000
// containers' bare engine calls (create + start straight at the simulated
// hosts, round robin, from a pool of the same concurrency): their rate and
// p99. It reports both, their ratios, and the Engine API calls each makes
// per container (berth's placement lists every host once per
// runtime.DefaultViewTTL, not per create: at 1,000 hosts most of its calls).
func BenchmarkSimBurst(b *testing.B) {
	fleet, err := dockersim.New(dockersim.Options{Hosts: burstHosts, Images: []string{simImage}})
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.Close()
	e := newServeEnv(b, serveOptions{maxConcurrency: burstConcurrency, maxPending: 2 * burstCreates, noImageRefresh: true,
		simHosts: fleet.DockerHosts(config.DockerHost{})})
	e.start()
	e.must(e.call("PUT", "/api/templates/sim", adminToken, berth.Template{Runtime: "docker", Image: simImage,
		PullPolicy: berth.PullNever, Command: []string{"run"}}), http.StatusCreated)
	var berthRate, bareRate float64
	var berthLat, bareLat []time.Duration
	var berthCalls, bareCalls int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		calls := fleet.Calls()
		berthRate, berthLat = berthSimBurst(b, e)
		berthCalls = fleet.Calls() - calls
		calls = fleet.Calls()
		bareRate, bareLat = bareSimBurst(b, fleet)
		bareCalls = fleet.Calls() - calls
	}
	b.StopTimer()
	b.ReportMetric(berthRate, "berth-creates/s")
	b.ReportMetric(bareRate, "bare-creates/s")
	b.ReportMetric(berthRate/bareRate, "berth/bare-rate")
	b.ReportMetric(ms(percentile(berthLat, 50)), "berth-p50-ms")
	b.ReportMetric(ms(percentile(berthLat, 99)), "berth-p99-ms")
	b.ReportMetric(ms(percentile(bareLat, 99)), "bare-p99-ms")
	b.ReportMetric(float64(percentile(berthLat, 99))/float64(percentile(bareLat, 99)), "berth/bare-p99")
	b.ReportMetric(float64(berthCalls)/burstCreates, "berth-engine-calls/container")
	b.ReportMetric(float64(bareCalls)/burstCreates, "bare-engine-calls/container")
}

// berthSimBurst posts the creates from burstClients clients, waits until
// none is pending or creating, and reads every instance's times.
func berthSimBurst(b *testing.B, e *serveEnv) (float64, []time.Duration) {
	b.Helper()
	start := time.Now()
	jobs := make(chan struct{}, burstCreates)
	for range burstCreates {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range burstClients {
		wg.Go(func() {
			for range jobs {
				r, err := e.do("POST", "/api/containers", aliceToken, map[string]string{"template": "sim"})
				if err != nil || r.status != http.StatusAccepted {
					b.Errorf("create: %d %v %s", r.status, err, r.body)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var page struct {
			Items []berth.Instance `json:"items"`
		}
		r := e.must(e.call("GET", "/api/containers?status=pending&status=creating&limit=1", adminToken, nil), http.StatusOK)
		if err := json.Unmarshal(r.body, &page); err != nil {
			b.Fatal(err)
		}
		if len(page.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the burst is not done after 10 minutes: %s", tail(e.logs.String(), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var lat []time.Duration
	var last time.Time
	for _, in := range allInstances(b, e) {
		if in.Status != fsm.Running {
			b.Fatalf("instance %s is %s (%s), want running", in.ID, in.Status, in.StatusReason)
		}
		lat = append(lat, in.UpdatedAt.Sub(in.CreatedAt))
		if in.UpdatedAt.After(last) {
			last = in.UpdatedAt
		}
	}
	if len(lat) != burstCreates {
		b.Fatalf("%d instances, want %d", len(lat), burstCreates)
	}
	return float64(burstCreates) / last.Sub(start).Seconds(), lat
}

// allInstances walks every page of the admin's list.
func allInstances(b *testing.B, e *serveEnv) []berth.Instance {
	b.Helper()
	var out []berth.Instance
	cursor := ""
	for {
		var page struct {
			Items      []berth.Instance `json:"items"`
			NextCursor string           `json:"next_cursor"`
		}
		r := e.must(e.call("GET", "/api/containers?limit=100"+cursor, adminToken, nil), http.StatusOK)
		if err := json.Unmarshal(r.body, &page); err != nil {
			b.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = "&cursor=" + page.NextCursor
	}
}

// bareSimBurst makes the same number of containers with the raw Engine
// API client, create then start, round robin over the fleet's hosts from
// a pool of burstConcurrency goroutines; each container's time is from the
// burst's start (when all were asked for, as berth's creates are posted
// at once) to its start's answer.
func bareSimBurst(b *testing.B, fleet *dockersim.Fleet) (float64, []time.Duration) {
	b.Helper()
	ctx := context.Background()
	clis := make([]*client.Client, len(fleet.Hosts()))
	for i, h := range fleet.Hosts() {
		cli, err := client.New(client.WithHost(h.Endpoint()))
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		clis[i] = cli
	}
	jobs := make(chan int, burstCreates)
	for i := range burstCreates {
		jobs <- i
	}
	close(jobs)
	lat := make([]time.Duration, burstCreates)
	start := time.Now()
	var wg sync.WaitGroup
	for range burstConcurrency {
		wg.Go(func() {
			for i := range jobs {
				cli := clis[i%len(clis)]
				created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
					Config:     &container.Config{Image: simImage, Cmd: []string{"run"}},
					HostConfig: &container.HostConfig{NetworkMode: "none"},
				})
				if err == nil {
					_, err = cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{})
				}
				if err != nil {
					b.Errorf("bare create+start: %v", err)
					return
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if b.Failed() {
		b.FailNow()
	}
	return float64(burstCreates) / took.Seconds(), lat
}
