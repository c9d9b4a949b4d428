package emulate_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/emulate"
)

var (
	berthBinOnce sync.Once
	berthBin     string
	berthBinErr  error
)

// berthCLI builds cmd/berth once per test binary (into the builds'
// directory, removed by TestMain).
func berthCLI(t *testing.T) string {
	t.Helper()
	builder(t)
	berthBinOnce.Do(buildBerthCLI)
	if berthBinErr != nil {
		t.Fatalf("building the berth CLI: %v", berthBinErr)
	}
	return berthBin
}

// berthCLIAhead starts berthCLI's build in the background, so that its link
// overlaps what the test does before it needs the CLI (a stack's start).
func berthCLIAhead(t *testing.T) {
	t.Helper()
	builder(t)
	go berthBinOnce.Do(buildBerthCLI)
}

// buildBerthCLI builds cmd/berth through the stacks' Builder, so that a
// CLI unchanged since the last run is not linked again.
func buildBerthCLI() {
	berthBin, berthBinErr = buildMain("../../cmd/berth")
}

// buildMain builds the main package in dir (relative to this package)
// through the shared Builder.
func buildMain(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return builds.Build(context.Background(), emulate.Package{Dir: abs})
}

// logsPolls is a proxy in front of the stack's front door that records
// when each logs request of one container came, and answers the one
// numbered tooMany (from 1; 0: none) 429 with Retry-After: 3 itself, as
// API Gateway's throttling does.
type logsPolls struct {
	url     string
	tooMany int

	mu    sync.Mutex
	at    []time.Time
	query []string
	// lines are the bytes of lines each answer carried.
	lines []int
	// seen is told after each logs answer.
	seen chan struct{}
}

// countingWriter counts the bytes of an answer's body.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

func newLogsPolls(t *testing.T, st *stack, id string, tooMany int) *logsPolls {
	front, err := url.Parse(st.url)
	if err != nil {
		t.Fatal(err)
	}
	p := &logsPolls{tooMany: tooMany, seen: make(chan struct{}, 1000)}
	proxy := httputil.NewSingleHostReverseProxy(front)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a request the CLI gave up at Ctrl-C
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/containers/"+id+"/logs" {
			proxy.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.at = append(p.at, time.Now())
		p.query = append(p.query, r.URL.RawQuery)
		n := len(p.at)
		p.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		if n == p.tooMany {
			w.Header().Set("Retry-After", "3")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"message":"Too Many Requests"}`))
		} else {
			proxy.ServeHTTP(cw, r)
		}
		p.mu.Lock()
		p.lines = append(p.lines, cw.n)
		p.mu.Unlock()
		p.seen <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// times returns when each logs request came, its query, and the bytes of
// lines of each answer given so far.
func (p *logsPolls) times() ([]time.Time, []string, []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.at...), append([]string(nil), p.query...), append([]int(nil), p.lines...)
}

// TestLogsFollowCLIThroughFrontDoor runs `berth containers logs -f`
// against the emulated stack's front door, which answers a follow with
// Berth-Follow: poll and a cursor (API Gateway cannot stream): the CLI
// keeps polling from the cursor, prints each line once, waits out a 429's
// Retry-After, and exits 0 once the container has ended and every line is
// out; a follow of a container that prints nothing more backs off, and
// ends at Ctrl-C. (TestServeLogs in cmd/berth shows -f on berth serve's
// streamed follow.)
func TestLogsFollowCLIThroughFrontDoor(t *testing.T) {
	t.Parallel()
	berthCLIAhead(t)
	st := start(t, setup{watcher: true})
	bin := berthCLI(t)
	// The talker prints its lines over 6 s, then waits to be stopped (its
	// end is the test's to choose, after the polls it checks: a fixed
	// lifetime raced the polls on a slow machine).
	st.putTemplate("talker", []string{"sh", "-c",
		"trap 'exit 0' TERM; echo one; sleep 3; echo two >&2; sleep 3; echo three; while :; do sleep 0.2; done"})
	st.putTemplate("quiet", []string{"sh", "-c", "echo hi; exec sleep 3600"})

	t.Run("until the container ends", func(t *testing.T) {
		id := st.create(aliceToken, "talker", "talker")
		st.wait(aliceToken, id, "running", time.Minute)
		polls := newLogsPolls(t, st, id, 2)
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, "containers", "logs", id, "-f")
		cmd.Env = append(os.Environ(), "BERTH_URL="+polls.url, "BERTH_TOKEN="+aliceToken)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Every line answered, and the first, the 429, its retry and one
		// more asked: then the container is stopped, and the follow ends.
		followed := func() bool {
			at, _, lines := polls.times()
			n := 0
			for _, l := range lines {
				n += l
			}
			return len(at) >= 4 && n >= len("one\ntwo\nthree\n")
		}
		for deadline := time.After(3 * time.Minute); !followed(); {
			select {
			case <-polls.seen:
			case err := <-done:
				_, queries, _ := polls.times()
				t.Fatalf("the follow ended (%v) while the container runs, after %q: stdout %q, stderr %s", err, queries, out.String(), errOut.String())
			case <-deadline:
				_, queries, _ := polls.times()
				t.Fatalf("3 minutes on, %d logs requests (%q): want the first, the 429, its retry and more, with every line", len(queries), queries)
			}
		}
		if r := st.do(http.MethodPost, "/api/containers/"+id+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
			t.Fatalf("stop: %d", r.status)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("berth containers logs -f: %v\nstdout %q\nstderr %s", err, out.String(), errOut.String())
			}
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("berth containers logs -f still following 3 minutes on: stdout %q, stderr %s", out.String(), errOut.String())
		}
		if out.String() != "one\ntwo\nthree\n" {
			t.Errorf("stdout %q, want each line once; stderr %s", out.String(), errOut.String())
		}
		// It stopped because the container had ended, not before.
		if in := st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil).json(t); in["status"] != "stopped" {
			t.Errorf("the follow ended while the container is %v", in["status"])
		}
		at, queries, _ := polls.times()
		// The 429 is asked again after its Retry-After, from the same cursor.
		if gap := at[2].Sub(at[1]); gap < 3*time.Second {
			t.Errorf("asked again %v after a 429 with Retry-After: 3", gap)
		}
		if queries[1] != queries[2] || !strings.Contains(queries[1], "since=") {
			t.Errorf("the retry asked %q, the 429 answered %q", queries[2], queries[1])
		}
		for i, q := range queries {
			if !strings.Contains(q, "follow=true") {
				t.Errorf("request %d: %q", i, q)
			}
		}
	})

	t.Run("backs off, and ends at Ctrl-C", func(t *testing.T) {
		id := st.create(aliceToken, "quiet", "quiet")
		st.wait(aliceToken, id, "running", time.Minute)
		polls := newLogsPolls(t, st, id, 0)
		cmd := exec.Command(bin, "containers", "logs", id, "-f")
		cmd.Env = append(os.Environ(), "BERTH_URL="+polls.url, "BERTH_TOKEN="+aliceToken)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Polls until an empty one that is not the first has been followed
		// by the next.
		emptyAt := func() int {
			_, _, lines := polls.times()
			for k := 1; k+1 < len(lines); k++ {
				if lines[k] == 0 {
					return k
				}
			}
			return 0
		}
		deadline := time.After(2 * time.Minute)
		for emptyAt() == 0 {
			select {
			case <-polls.seen:
			case err := <-done:
				t.Fatalf("the follow ended by itself (%v): stdout %q, stderr %s", err, out.String(), errOut.String())
			case <-deadline:
				t.Fatal("no empty poll (but the first) followed by another in 2 minutes")
			}
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after Ctrl-C: %v, stderr %s", err, errOut.String())
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Fatal("still following a minute after Ctrl-C")
		}
		if out.String() != "hi\n" {
			t.Errorf("stdout %q, want the one line once", out.String())
		}
		// After an empty poll (but the first request) the wait has doubled
		// at least once from the 1 s minimum.
		k := emptyAt()
		at, queries, lines := polls.times()
		if gap := at[k+1].Sub(at[k]); gap < 2*time.Second {
			t.Errorf("%v from the empty poll %d to the next (requests %q, answers' bytes %v): no back-off", gap, k, queries, lines)
		}
	})
}
