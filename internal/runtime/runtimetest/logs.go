package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

// RunLogs runs the LogReader contract's cases that read what a container
// printed. The harness needs Printing. (Run holds the case that needs no
// output: the logs of a container that is gone.)
func RunLogs(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness, lr runtime.LogReader)
	}{
		{"BothStreamsDemultiplexed", testLogsStreams},
		{"Tail", testLogsTail},
		{"Since", testLogsSince},
		{"PrintedNothing", testLogsEmpty},
		{"VeryLongLine", testLogsLongLine},
		{"BinaryOutput", testLogsBinary},
		{"FollowEndsWithTheContainer", testLogsFollow},
		{"CallbackErrorStops", testLogsCallbackError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			if h.Timeout == 0 {
				h.Timeout = 90 * time.Second
			}
			if h.Printing == nil {
				t.Fatal("RunLogs needs Harness.Printing")
			}
			c.fn(t, h, logReader(t, h))
		})
	}
}

func logReader(t *testing.T, h Harness) runtime.LogReader {
	t.Helper()
	lr, ok := h.Runtime.(runtime.LogReader)
	if !ok {
		t.Fatalf("%T does not implement runtime.LogReader", h.Runtime)
	}
	return lr
}

// line is a LogLine kept past its callback.
type line struct {
	stream  runtime.LogStream
	at      time.Time
	text    string
	partial bool
}

func readLogs(t *testing.T, ctx context.Context, lr runtime.LogReader, ref runtime.Ref, opts runtime.LogOptions) []line {
	t.Helper()
	var out []line
	err := lr.Logs(ctx, ref, opts, func(l runtime.LogLine) error {
		out = append(out, line{l.Stream, l.Time, string(l.Text), l.Partial})
		return nil
	})
	if err != nil {
		t.Fatalf("logs %+v: %v", opts, err)
	}
	return out
}

func texts(ls []line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

func ofStream(ls []line, s runtime.LogStream) []string {
	var out []string
	for _, l := range ls {
		if l.stream == s {
			out = append(out, l.text)
		}
	}
	return out
}

// ran runs script to its end and returns its ref.
func ran(t *testing.T, ctx context.Context, h Harness, script string) runtime.Ref {
	t.Helper()
	events := watch(t, ctx, h.Runtime)
	inst := h.Printing(t, script)
	ref := createStarted(t, ctx, h.Runtime, &inst)
	waitFor(t, ctx, events, inst.ID, "exited", kindIs(runtime.EventExited))
	return ref
}

func testLogsStreams(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, "echo out1; echo err1 >&2; echo out2; echo err2 >&2")
	all := readLogs(t, ctx, lr, ref, runtime.LogOptions{})
	if got := ofStream(all, runtime.LogStdout); !slices.Equal(got, []string{"out1", "out2"}) {
		t.Errorf("stdout lines %q, want out1 out2 (all: %+v)", got, all)
	}
	if got := ofStream(all, runtime.LogStderr); !slices.Equal(got, []string{"err1", "err2"}) {
		t.Errorf("stderr lines %q, want err1 err2 (all: %+v)", got, all)
	}
	if len(all) != 4 {
		t.Errorf("both streams gave %d lines, want 4: %+v", len(all), all)
	}
	for _, l := range all {
		if l.at.IsZero() || l.partial {
			t.Errorf("line %+v: want a time and no partial mark", l)
		}
	}
	for _, s := range []runtime.LogStream{runtime.LogStdout, runtime.LogStderr} {
		got := readLogs(t, ctx, lr, ref, runtime.LogOptions{Stream: s})
		if want := ofStream(all, s); !slices.Equal(texts(got), want) || len(ofStream(got, s)) != len(got) {
			t.Errorf("stream %s alone: %+v, want %q", s, got, want)
		}
	}
}

func testLogsTail(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, "i=1; while [ $i -le 50 ]; do echo line$i; i=$((i+1)); done")
	if got := texts(readLogs(t, ctx, lr, ref, runtime.LogOptions{})); len(got) != 50 || got[0] != "line1" || got[49] != "line50" {
		t.Errorf("all lines: %d, %q…", len(got), got[:min(3, len(got))])
	}
	got := texts(readLogs(t, ctx, lr, ref, runtime.LogOptions{Tail: 3}))
	if want := []string{"line48", "line49", "line50"}; !slices.Equal(got, want) {
		t.Errorf("tail 3 = %q, want %q", got, want)
	}
	if got := readLogs(t, ctx, lr, ref, runtime.LogOptions{Tail: 500}); len(got) != 50 {
		t.Errorf("tail 500 gave %d lines, want all 50", len(got))
	}
}

func testLogsSince(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, "echo early; sleep 1.1; echo late1; echo late2")
	all := readLogs(t, ctx, lr, ref, runtime.LogOptions{})
	if got := texts(all); !slices.Equal(got, []string{"early", "late1", "late2"}) {
		t.Fatalf("lines %q", got)
	}
	// A line written at since exactly is kept: since = a line's time
	// resumes at that line.
	got := readLogs(t, ctx, lr, ref, runtime.LogOptions{Since: all[1].at})
	if want := []string{"late1", "late2"}; !slices.Equal(texts(got), want) {
		t.Errorf("since late1's time: %q, want %q", texts(got), want)
	}
	if !got[0].at.Equal(all[1].at) {
		t.Errorf("the same line has another time: %v vs %v", got[0].at, all[1].at)
	}
	if got := readLogs(t, ctx, lr, ref, runtime.LogOptions{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
		t.Errorf("since an hour ahead: %q", texts(got))
	}
	got = readLogs(t, ctx, lr, ref, runtime.LogOptions{Since: all[1].at, Tail: 1})
	if !slices.Equal(texts(got), []string{"late2"}) {
		t.Errorf("since and tail 1: %q, want late2", texts(got))
	}
}

func testLogsEmpty(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, "true")
	for _, o := range []runtime.LogOptions{{}, {Tail: 10}, {Stream: runtime.LogStderr}, {Follow: true}} {
		if got := readLogs(t, ctx, lr, ref, o); len(got) != 0 {
			t.Errorf("logs %+v of a container that printed nothing: %+v", o, got)
		}
	}
}

func testLogsLongLine(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	const n = 3*runtime.MaxLogLine + 1000
	ref := ran(t, ctx, h, fmt.Sprintf("echo before; head -c %d /dev/zero | tr '\\000' x; echo; echo after", n))
	got := readLogs(t, ctx, lr, ref, runtime.LogOptions{})
	if len(got) < 3 || got[0].text != "before" || got[len(got)-1].text != "after" {
		t.Fatalf("lines around the long one: %d lines", len(got))
	}
	var long strings.Builder
	for i, l := range got[1 : len(got)-1] {
		if len(l.text) > runtime.MaxLogLine {
			t.Errorf("piece %d has %d bytes, over MaxLogLine", i, len(l.text))
		}
		last := i == len(got)-3
		if l.partial == last {
			t.Errorf("piece %d of %d: partial = %v", i, len(got)-2, l.partial)
		}
		if l.stream != got[0].stream {
			t.Errorf("piece %d on stream %q", i, l.stream)
		}
		long.WriteString(l.text)
	}
	if long.Len() != n || strings.Trim(long.String(), "x") != "" {
		t.Errorf("the long line came back as %d bytes, want %d x", long.Len(), n)
	}
}

func testLogsBinary(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, `printf 'a\000b\001\033[31mc\tz\r\n'; printf '\377\376\n'; printf 'no newline at the end'`)
	got := readLogs(t, ctx, lr, ref, runtime.LogOptions{})
	if len(got) != 3 {
		t.Fatalf("binary output gave %d lines, want 3: %q", len(got), texts(got))
	}
	if want := "a\x00b\x01\x1b[31mc\tz\r"; got[0].text != want {
		t.Errorf("control bytes: %q, want %q", got[0].text, want)
	}
	// Invalid UTF-8 is either kept or replaced (Docker's json-file driver
	// stores text and replaces it); either way the line is there.
	if s := got[1].text; s != "\xff\xfe" && strings.Trim(s, string(utf8.RuneError)) != "" {
		t.Errorf("invalid UTF-8 came back as %q", s)
	}
	if got[2].text != "no newline at the end" || got[2].partial {
		t.Errorf("last line without a newline: %+v", got[2])
	}
}

func testLogsFollow(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	events := watch(t, ctx, rt)
	// The follow starts once the container runs, a second before its
	// second line: it reads the backlog, then waits for what comes.
	inst := h.Printing(t, "echo one; sleep 1; echo two; sleep 0.5")
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "started", kindIs(runtime.EventStarted))
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- lr.Logs(ctx, ref, runtime.LogOptions{Follow: true}, func(l runtime.LogLine) error {
			got = append(got, string(l.Text))
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("follow: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the follow did not end when the container did")
	}
	if !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("follow read %q, want one two", got)
	}
	st, err := rt.Inspect(ctx, ref)
	if err != nil || st.Phase.Active() {
		t.Errorf("the follow ended while the container is %s (%v)", st.Phase, err)
	}

	// A follow of a running container ends when its reader leaves.
	inst = h.Printing(t, "echo hello; sleep 60")
	ref = createStarted(t, ctx, rt, &inst)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = lr.Logs(fctx, ref, runtime.LogOptions{Follow: true}, func(l runtime.LogLine) error {
		if string(l.Text) == "hello" {
			cancel()
		}
		return nil
	})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("follow after its reader left: %v, want context.Canceled", err)
	}
}

func testLogsCallbackError(t *testing.T, h Harness, lr runtime.LogReader) {
	ctx := testenv.Context(t, h.Timeout)
	ref := ran(t, ctx, h, "echo one; echo two; echo three")
	stop := errors.New("enough")
	n := 0
	err := lr.Logs(ctx, ref, runtime.LogOptions{}, func(runtime.LogLine) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("a callback error: err %v after %d lines, want %v after 1", err, n, stop)
	}
	var re *runtime.Error
	if errors.As(err, &re) {
		t.Errorf("the callback's error was classified as a runtime failure: %v", err)
	}
}

// testLogsMissing: the logs of a container that is gone, or was never
// made, are ErrNotFound.
func testLogsMissing(t *testing.T, h Harness) {
	ctx := testenv.Context(t, h.Timeout)
	rt := h.Runtime
	lr := logReader(t, h)
	events := watch(t, ctx, rt)
	inst := h.Exiting(t, 1)
	ref := createStarted(t, ctx, rt, &inst)
	waitFor(t, ctx, events, inst.ID, "exited", kindIs(runtime.EventExited))
	if err := rt.Delete(ctx, ref); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitFor(t, ctx, events, inst.ID, "destroyed", kindIs(runtime.EventDestroyed))
	for _, r := range []runtime.Ref{ref, {InstanceID: inst.ID}, {InstanceID: container.NewID()}} {
		called := false
		err := lr.Logs(ctx, r, runtime.LogOptions{Follow: true}, func(runtime.LogLine) error {
			called = true
			return nil
		})
		if !runtime.IsNotFound(err) || called {
			t.Errorf("logs of %+v: %v (lines: %v), want not found", r, err, called)
		}
	}
}
