package startstop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/startstop"
)

// journal records the services' starts and stops in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, s)
}

func (j *journal) index(s string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Index(j.lines, s)
}

// recorded runs until stopped, writing "start name" and "stop name".
func recorded(j *journal, name string) *startstop.Loop {
	return startstop.New(name, startstop.Blocking(func(ctx context.Context) error {
		j.add("start " + name)
		<-ctx.Done()
		j.add("stop " + name)
		return nil
	}))
}

// before fails unless a was recorded before b.
func (j *journal) before(t *testing.T, a, b string) {
	t.Helper()
	if i, k := j.index(a), j.index(b); i < 0 || k < 0 || i > k {
		t.Errorf("%q not before %q in %q", a, b, j.lines)
	}
}

func TestGroupStartsInStagesAndStopsInReverse(t *testing.T) {
	j := &journal{}
	g := startstop.NewGroup("test", nil).
		Stage("loops", recorded(j, "a"), recorded(j, "b")).
		Stage("intake", recorded(j, "c"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	wait(t, g.Started(), "group started")
	for _, name := range []string{"a", "b", "c"} {
		wait(t, g.Service(name).Started(), name+" started")
	}
	if g.Service("nope") != nil {
		t.Error("a service that is not there was found")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after ctx ended: %v", err)
	}
	for _, name := range []string{"a", "b", "c"} {
		wait(t, g.Service(name).Stopped(), name+" stopped")
	}
	// Start signals come before the body runs, so the order of the bodies'
	// lines is only certain across stages.
	j.before(t, "stop c", "stop a")
	j.before(t, "stop c", "stop b")
}

func TestGroupStopsAllOnTheFirstFailure(t *testing.T) {
	j := &journal{}
	boom := errors.New("boom")
	fail := make(chan struct{})
	failing := startstop.New("failing", startstop.Blocking(func(ctx context.Context) error {
		select {
		case <-fail:
			return boom
		case <-ctx.Done():
			return nil
		}
	}))
	g := startstop.NewGroup("test", nil).Stage("first", recorded(j, "a")).Stage("second", failing, recorded(j, "b"))
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background()) }()
	wait(t, g.Started(), "group started")
	close(fail)
	err := <-done
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "failing: ") {
		t.Fatalf("Run = %v, want the failure under the service's name", err)
	}
	wait(t, g.Stopped(), "group stopped")
	j.before(t, "stop b", "stop a")
}

func TestGroupStopsOnStop(t *testing.T) {
	j := &journal{}
	g := startstop.NewGroup("test", nil).Stage("only", recorded(j, "a"))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	wait(t, g.Service("a").Stopped(), "a stopped")
	if g.Err() != nil {
		t.Errorf("a stopped group failed: %v", g.Err())
	}
}

// refusing is a Service whose Start fails.
type refusing struct{ *startstop.Loop }

func (refusing) Start(context.Context) error { return errors.New("no") }

func TestGroupStartFailureStopsWhatStarted(t *testing.T) {
	j := &journal{}
	a := recorded(j, "a")
	g := startstop.NewGroup("test", nil).
		Stage("first", a).
		Stage("second", refusing{startstop.New("refusing", nil)}).
		Stage("third", recorded(j, "c"))
	err := g.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Start = %v, want the refusal", err)
	}
	wait(t, a.Stopped(), "the first stage stopped")
	select {
	case <-g.Service("c").Started():
		t.Error("a stage after the refusal was started")
	default:
	}
	g.Stop() // returns: the group never ran
}

// A service that ends on its own without an error (a check at start-up)
// leaves the others running.
func TestGroupOutlivesAServiceThatEnds(t *testing.T) {
	j := &journal{}
	once := startstop.New("once", startstop.Once(func(context.Context) {}))
	g := startstop.NewGroup("test", nil).Stage("only", once, recorded(j, "a"))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait(t, once.Stopped(), "once ended")
	select {
	case <-g.Stopped():
		t.Fatal("the group stopped when a service ended without failing")
	default:
	}
	g.Stop()
	if g.Err() != nil {
		t.Errorf("Err = %v", g.Err())
	}
}
