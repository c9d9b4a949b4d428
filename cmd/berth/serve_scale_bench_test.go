package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// scaleFill is one finished container as the local server leaves it: the
// instance went pending → creating → running → stopped through the store's
// own writes, with the events and the (done, still retained) create outbox
// item a real run leaves behind. stopped is the status a container rests in
// once its process has ended: it is terminal, so neither the start-up
// recovery nor the reconciler act on it, and no real container is needed
// for the figures to be the steady state's. (A running instance whose
// container does not exist would be failed by the reconciler's first pass
// after AbsentGrace, changing the store under the measurement.)
func scaleFill(tb testing.TB, st *boltstore.Store, owner, image string) string {
	tb.Helper()
	ctx := context.Background()
	obID := container.NewID()
	in, err := st.CreateInstance(ctx, store.CreateParams{
		Instance: container.Instance{ID: container.NewID(), Name: "job", Owner: owner, Template: "sleeper",
			Labels: map[string]string{"team": owner}, Runtime: container.RuntimeDocker, Image: image,
			Spec: container.Spec{Runtime: container.RuntimeDocker, Image: image, Command: []string{"sleep", "1"}}},
		Outbox: container.OutboxItem{ID: obID, Op: container.OpCreate},
		Event:  container.Event{Type: container.EventCreateRequested, To: fsm.Pending, Actor: owner},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.MarkDispatched(ctx, obID, time.Time{}); err != nil {
		tb.Fatal(err)
	}
	runtimeID := strings.ToLower(container.NewID())
	steps := []store.TransitionParams{
		{From: fsm.Pending, To: fsm.Creating,
			Event: &container.Event{Type: container.EventCreating, From: fsm.Pending, To: fsm.Creating, Actor: container.ActorSystem}},
		{From: fsm.Creating, To: fsm.Running, CompleteOutboxID: obID,
			Update: func(i *container.Instance) {
				now := time.Now().UTC()
				i.RuntimeID, i.RuntimeNodeName, i.StartedAt = runtimeID, "local", &now
			},
			Event: &container.Event{Type: container.EventStarted, From: fsm.Creating, To: fsm.Running, Actor: container.ActorSystem}},
		{From: fsm.Running, To: fsm.Stopped,
			Update: func(i *container.Instance) {
				now, code := time.Now().UTC(), 0
				i.FinishedAt, i.ExitCode = &now, &code
			},
			Event: &container.Event{Type: container.EventExited, From: fsm.Running, To: fsm.Stopped, Actor: container.ActorSystem}},
	}
	if _, err := scaleSteps(st, in, steps); err != nil {
		tb.Fatal(err)
	}
	return in.ID
}

// scaleSteps applies the transitions in order, each on the version the last
// one left.
func scaleSteps(st *boltstore.Store, in container.Instance, steps []store.TransitionParams) (container.Instance, error) {
	for _, p := range steps {
		p.ID, p.ExpectVersion = in.ID, in.Version
		var err error
		if in, err = st.Transition(context.Background(), p); err != nil {
			return in, fmt.Errorf("%s → %s: %w", p.From, p.To, err)
		}
	}
	return in, nil
}

// scaleDelete deletes a stopped instance the way the API and the delete
// worker do: stopped → delete_pending with the delete outbox item, →
// deleting, then the delete itself, which completes the item.
func scaleDelete(tb testing.TB, st *boltstore.Store, id string) {
	tb.Helper()
	ctx := context.Background()
	in, err := st.GetInstance(ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	obID := container.NewID()
	in, err = scaleSteps(st, in, []store.TransitionParams{
		{From: fsm.Stopped, To: fsm.DeletePending, Outbox: &container.OutboxItem{ID: obID, Op: container.OpDelete},
			Event: &container.Event{Type: container.EventDeleteRequested, From: fsm.Stopped, To: fsm.DeletePending, Actor: in.Owner}},
		{From: fsm.DeletePending, To: fsm.Deleting,
			Event: &container.Event{Type: container.EventDeleting, From: fsm.DeletePending, To: fsm.Deleting, Actor: container.ActorSystem}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.MarkDispatched(ctx, obID, time.Time{}); err != nil {
		tb.Fatal(err)
	}
	if err := st.DeleteInstance(ctx, store.DeleteParams{ID: id, ExpectVersion: in.Version, CompleteOutboxID: obID,
		Event: container.Event{Type: container.EventDeleted, From: fsm.Deleting, Actor: container.ActorSystem}}); err != nil {
		tb.Fatal(err)
	}
}

// scaleOwners spreads the instances over ten owners: alice holds one in
// ten, so her listing walks her share of the owner index among the others.
func scaleOwner(i int) string {
	if i%10 == 0 {
		return "alice"
	}
	return "user-" + strconv.Itoa(i%10)
}

// measureSizes runs measure at small, then at large, b.N times (the
// baseline and the size it is compared with, in the same run), and returns
// the last run of each.
func measureSizes(b *testing.B, small, large int, measure func(*testing.B, int) *serveAtScale) (s, l *serveAtScale) {
	for i := 0; i < b.N; i++ {
		s, l = measure(b, small), measure(b, large)
	}
	b.StopTimer()
	return s, l
}

// serveAtScale is one `berth serve` on a store filled with n finished
// instances, and the figures measured on it.
type serveAtScale struct {
	n        int
	startups []time.Duration
	rssKB    int // VmRSS right after start-up
	hwmKB    int // VmHWM after the request load
	// After the load, RSS split: anonymous (heap, stacks) and file-backed
	// (the bbolt file's mmap'd pages the reads touched, page cache shared
	// with the kernel).
	anonKB, fileKB int
	adminList      []time.Duration
	ownerList      []time.Duration
	statusList     []time.Duration
	get            []time.Duration
	livez          []time.Duration
}

// BenchmarkServeScale runs `berth serve` on a bolt store holding 10,000
// instances and on one holding 1,000 (the baseline), one after the other in
// the same run, and reports for both: the start-up time until /readyz
// answers (median of 5), the server's RSS (after start-up; its peak, and
// anonymous vs file-backed, after the requests), and p50/p99 of the API's list
// (every page of 100, as the admin and as an owner, and the admin's list
// filtered by a status no instance has) and get, beside GET /livez as the
// HTTP floor. A second part measures the file: its size holding 10,000 live
// instances, and after one and after two cycles of 10,000 creates and
// deletes followed by a purge (run with the clock past every retention, as
// the hourly purge would find it).
func BenchmarkServeScale(b *testing.B) {
	const large, small = 10_000, 1_000
	s, l := measureSizes(b, small, large, measureServe)
	report := func(name string, small, large []time.Duration) {
		b.ReportMetric(ms(percentile(large, 50)), name+"-p50-ms")
		b.ReportMetric(ms(percentile(large, 99)), name+"-p99-ms")
		b.ReportMetric(float64(percentile(large, 50))/float64(percentile(small, 50)), name+"-p50-10k/1k")
	}
	b.ReportMetric(ms(median(l.startups)), "startup-10k-ms")
	b.ReportMetric(ms(median(s.startups)), "startup-1k-ms")
	b.ReportMetric(float64(l.rssKB)/1024, "rss-10k-MiB")
	b.ReportMetric(float64(s.rssKB)/1024, "rss-1k-MiB")
	b.ReportMetric(float64(l.hwmKB)/1024, "hwm-10k-MiB")
	b.ReportMetric(float64(s.hwmKB)/1024, "hwm-1k-MiB")
	b.ReportMetric(float64(l.anonKB)/1024, "rss-anon-10k-MiB")
	b.ReportMetric(float64(s.anonKB)/1024, "rss-anon-1k-MiB")
	b.ReportMetric(float64(l.fileKB)/1024, "rss-file-10k-MiB")
	b.ReportMetric(float64(s.fileKB)/1024, "rss-file-1k-MiB")
	report("list-admin", s.adminList, l.adminList)
	report("list-owner", s.ownerList, l.ownerList)
	report("list-status", s.statusList, l.statusList)
	report("get", s.get, l.get)
	b.ReportMetric(ms(percentile(l.livez, 50)), "livez-p50-ms")
	b.ReportMetric(ms(percentile(l.livez, 99)), "livez-p99-ms")

	live, cycle1, cycle2 := boltCycles(b, large)
	b.ReportMetric(float64(live)/(1<<20), "file-10k-live-MiB")
	b.ReportMetric(float64(cycle1)/(1<<20), "file-cycle1-MiB")
	b.ReportMetric(float64(cycle2)/(1<<20), "file-cycle2-MiB")
	b.ReportMetric(float64(cycle2)/float64(cycle1), "file-cycle2/cycle1")
}

func measureServe(b *testing.B, n int) *serveAtScale {
	b.Helper()
	return measureServeFilled(b, n, serveOptions{noImageRefresh: true}, fsm.Running, func(e *serveEnv, st *boltstore.Store, i int) string {
		return scaleFill(b, st, scaleOwner(i), e.image)
	})
}

// measureServeFilled is measureServe with the server's options and the
// fill of instance i given; absent is a status no filled instance has (the
// filtered list's).
func measureServeFilled(b *testing.B, n int, o serveOptions, absent fsm.Status,
	fill func(e *serveEnv, st *boltstore.Store, i int) string) *serveAtScale {
	b.Helper()
	e := newServeEnv(b, o)
	path := filepath.Join(e.dir, "data", "berth.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	st, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	var alice []string
	b.StopTimer()
	for i := range n {
		if id := fill(e, st, i); scaleOwner(i) == "alice" {
			alice = append(alice, id)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	// The fill did not fsync; flushing it now keeps that cost out of the
	// first start-up.
	if err := syncFile(path); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()

	m := &serveAtScale{n: n}
	const startups = 5
	for range startups {
		start := time.Now()
		e.start()
		m.startups = append(m.startups, time.Since(start))
		if len(m.startups) < startups {
			e.stop()
		}
	}
	m.rssKB = procStatusKB(b, e.proc.Process.Pid, "VmRSS")
	b.Logf("%d instances: start-ups %v", n, m.startups)

	hc := &http.Client{}
	get := func(path, token string, want int) (time.Duration, []byte) {
		req, err := http.NewRequest(http.MethodGet, "http://"+e.addr+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		resp.Body.Close()
		if err != nil || resp.StatusCode != want {
			b.Fatalf("GET %s: %d %v: %.200s", path, resp.StatusCode, err, body)
		}
		return took, body
	}
	// Walk every page three times (the first walk warms the page cache
	// the same way for both sizes); the cursor comes from each answer.
	walk := func(query, token string, want int) []time.Duration {
		var out []time.Duration
		for range 3 {
			cursor, pages := "", 0
			for {
				took, body := get("/api/containers?limit=100"+query+cursor, token, http.StatusOK)
				out = append(out, took)
				pages++
				c := nextCursor(b, body)
				if c == "" {
					break
				}
				cursor = "&cursor=" + c
			}
			if pages != want {
				b.Fatalf("listing %q as %s took %d pages, want %d", query, token, pages, want)
			}
		}
		return out
	}
	m.adminList = walk("", adminToken, n/100)
	m.ownerList = walk("", aliceToken, max(1, n/1000))
	for range 30 {
		took, _ := get("/api/containers?limit=100&status="+string(absent), adminToken, http.StatusOK)
		m.statusList = append(m.statusList, took)
	}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for range 1000 {
		took, _ := get("/api/containers/"+alice[rng.IntN(len(alice))], aliceToken, http.StatusOK)
		m.get = append(m.get, took)
		took, _ = get("/livez", aliceToken, http.StatusOK)
		m.livez = append(m.livez, took)
	}
	m.hwmKB = procStatusKB(b, e.proc.Process.Pid, "VmHWM")
	m.anonKB = procStatusKB(b, e.proc.Process.Pid, "RssAnon")
	m.fileKB = procStatusKB(b, e.proc.Process.Pid, "RssFile")
	e.stop()
	return m
}

// boltCycles fills a fresh store file with n live instances and records its
// size, deletes them all and purges, then does a second cycle of n creates
// and deletes and purges again: bbolt never shrinks its file, but pages
// freed by the purge are reused, so the second cycle must not grow it.
func boltCycles(b *testing.B, n int) (live, cycle1, cycle2 int64) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "berth.db")
	clock := time.Now()
	st, err := boltstore.Open(path, boltstore.Options{Clock: func() time.Time { return clock }, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	cycle := func() {
		ids := make([]string, 0, n)
		for i := range n {
			ids = append(ids, scaleFill(b, st, scaleOwner(i), "berth-test/busybox:1"))
		}
		if live == 0 {
			live = size()
		}
		for _, id := range ids {
			scaleDelete(b, st, id)
		}
		// The purge runs as it would once every retention has passed.
		clock = clock.Add(store.OutboxMaxAge + store.EventRetention)
		if _, err := st.Purge(ctx, clock); err != nil {
			b.Fatal(err)
		}
	}
	cycle()
	cycle1 = size()
	cycle()
	cycle2 = size()
	if page, err := st.ListInstances(ctx, store.ListQuery{}); err != nil || len(page.Items) != 0 {
		b.Fatalf("after the cycles the store lists %d instances (%v), want none", len(page.Items), err)
	}
	return live, cycle1, cycle2
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// procStatusKB reads one kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatusKB(tb testing.TB, pid int, field string) int {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				tb.Fatalf("%s in /proc/%d/status: %v", field, pid, err)
			}
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func nextCursor(tb testing.TB, body []byte) string {
	tb.Helper()
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		tb.Fatalf("decoding a list page: %v: %.200s", err, body)
	}
	return page.NextCursor
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
