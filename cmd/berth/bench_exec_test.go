package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/fsm"
)

// BenchmarkExecRoundTrip compares, in one run in one container, berth's
// exec round trip (POST /api/containers/{id}/exec of `true` through berth
// serve: owner, template and running checks, the two leases, the start and
// end events fsynced to bolt, the engine's exec) with a bare `docker exec`
// of the same command (what the docker CLI sends: exec create, start
// attached, the stream to its end, exec inspect for the exit code),
// alternated. It reports both medians and their ratio (goal ≤ 1.5).
func BenchmarkExecRoundTrip(b *testing.B) {
	e := newServeEnv(b, serveOptions{})
	e.start()
	e.putExecTemplate()
	in := e.waitFor(e.create("shell").ID, fsm.Running, time.Minute)
	cli := e.engine.Client("local")
	ctx := context.Background()
	body := map[string]any{"command": []string{"true"}}
	bareExec := func() {
		cr, err := cli.ExecCreate(ctx, in.RuntimeID, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		at, err := cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_, err = stdcopy.StdCopy(io.Discard, io.Discard, at.Reader)
		at.Close()
		if err != nil {
			b.Fatal(err)
		}
		if r, err := cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{}); err != nil || r.ExitCode != 0 {
			b.Fatalf("bare exec: exit %d, %v", r.ExitCode, err)
		}
	}
	// One of each first: the engine's and the server's first exec pay for
	// what later ones find ready.
	e.exec(in.ID, aliceToken, body, http.StatusOK)
	bareExec()
	var berthTimes, bareTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		e.exec(in.ID, aliceToken, body, http.StatusOK)
		berthTimes = append(berthTimes, time.Since(start))

		start = time.Now()
		bareExec()
		bareTimes = append(bareTimes, time.Since(start))
	}
	b.StopTimer()
	mb, md := median(berthTimes), median(bareTimes)
	b.ReportMetric(float64(mb.Microseconds())/1000, "berth-ms")
	b.ReportMetric(float64(md.Microseconds())/1000, "docker-exec-ms")
	b.ReportMetric(float64(mb)/float64(md), "berth/docker-exec")
}
