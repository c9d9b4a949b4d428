package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// Last words on both stores and a real Docker engine: a container that
// exits non-zero, or that a group policy stops or deletes, has its last
// lines (bounded) kept with the event of its end; one that exits 0 or that
// its owner stops has none.
func TestLastWords(t *testing.T) {
	t.Parallel()
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		t.Run("exit non-zero", func(t *testing.T) {
			t.Parallel()
			r := newRig(t, b, 0)
			r.template("talker", `i=0; while [ $$i -lt 150 ]; do i=$$(($$i+1)); echo "out $$i"; done; echo bye; exit 3`)
			inst := r.create("talker")
			r.mustRun(inst.ID, container.OpCreate, "done")
			r.settled(inst.ID, fsm.Failed)
			lw := r.lastWords(inst.ID, container.EventFailed)
			if lw == nil || len(lw.Lines) != container.LastWordsMaxLines || !lw.Truncated {
				t.Fatalf("last words of 151 lines: %+v", lw)
			}
			// The last 100 of out 1..150 and bye, all on stdout (the engine
			// copies each stream on its own, so it keeps no order between
			// them: the streams are held in the group policy cases).
			var got, want []string
			for _, l := range lw.Lines {
				got = append(got, l.Stream+" "+l.Text)
			}
			for i := 52; i <= 150; i++ {
				want = append(want, fmt.Sprintf("stdout out %d", i))
			}
			if want = append(want, "stdout bye"); !slices.Equal(got, want) {
				t.Fatalf("last words: %q", got)
			}
		})
		t.Run("exit 0 keeps none", func(t *testing.T) {
			t.Parallel()
			r := newRig(t, b, 0)
			r.template("fine", `echo all good; exit 0`)
			inst := r.create("fine")
			r.mustRun(inst.ID, container.OpCreate, "done")
			r.settled(inst.ID, fsm.Stopped)
			r.noLastWords(inst.ID)
		})
		t.Run("owner's stop keeps none", func(t *testing.T) {
			t.Parallel()
			r := newRig(t, b, 0)
			r.template("chatty", chatty)
			inst := r.create("chatty")
			r.mustRun(inst.ID, container.OpCreate, "done")
			r.wantStatus(inst.ID, fsm.Running)
			if _, err := r.m.Stop(context.Background(), alice, inst.ID, nil, "req-stop"); err != nil {
				t.Fatal(err)
			}
			r.mustRun(inst.ID, container.OpStop, "done")
			r.wantStatus(inst.ID, fsm.Stopped)
			r.noLastWords(inst.ID)
		})
		for _, p := range []config.CleanupPolicy{config.CleanupStop, config.CleanupDelete} {
			t.Run("group policy "+string(p), func(t *testing.T) {
				t.Parallel()
				r := newRigWith(t, b, 0, manager.GroupPolicies{OnFinished: p})
				r.template("chatty", chatty)
				inst := r.member("chatty", "dag")
				r.mustRun(inst.ID, container.OpCreate, "done")
				r.wantStatus(inst.ID, fsm.Running)
				r.waitPrinted(inst, 2)
				if _, err := r.m.FinishGroup(context.Background(), alice, "", "dag", manager.OutcomeSucceeded, "req-finish"); err != nil {
					t.Fatal(err)
				}
				evType := container.EventStopped
				if p == config.CleanupStop {
					r.mustRun(inst.ID, container.OpGroupStop, "done")
					r.mustRun(inst.ID, container.OpStop, "done")
				} else {
					r.mustRun(inst.ID, container.OpGroupDelete, "done")
					r.mustRun(inst.ID, container.OpDelete, "done")
					r.gone(inst.ID)
					evType = container.EventDeleted
				}
				lw := r.lastWords(inst.ID, evType)
				// One line on each stream: the engine keeps no order between them.
				want := []container.OutputLine{{Stream: "stderr", Text: "oops"}, {Stream: "stdout", Text: "hello"}}
				if lw != nil {
					slices.SortFunc(lw.Lines, func(a, b container.OutputLine) int { return strings.Compare(a.Stream, b.Stream) })
				}
				if lw == nil || fmt.Sprint(lw.Lines) != fmt.Sprint(want) || lw.Truncated {
					t.Fatalf("last words on %s: %+v, want %+v", evType, lw, want)
				}
			})
		}
	})
}

// Logs reads from the engine: the faults wrapper injects none there.
func (f *faults) Logs(ctx context.Context, ref runtime.Ref, opts runtime.LogOptions, fn func(runtime.LogLine) error) error {
	return f.Runtime.(runtime.LogReader).Logs(ctx, ref, opts, fn)
}

// chatty prints a line on each stream and runs until stopped.
const chatty = `echo hello; echo oops >&2; exec sleep 3600`

// template stores a template of the test image running script.
func (r *rig) template(name, script string) {
	r.t.Helper()
	admin := identity.Caller{User: "root", Admin: true}
	if _, _, err := r.m.PutTemplate(context.Background(), admin, container.Template{Name: name, Runtime: "docker",
		Image: testenv.TestImage(r.t), PullPolicy: container.PullNever, Command: []string{"sh", "-c", script}}); err != nil {
		r.t.Fatal(err)
	}
}

// lastWords returns the last words of the instance's one event of evType.
func (r *rig) lastWords(id, evType string) *container.LastWords {
	r.t.Helper()
	var found []*container.LastWords
	for _, e := range r.events(id) {
		if e.Type == evType {
			found = append(found, e.LastWords)
		}
	}
	if len(found) != 1 {
		r.t.Fatalf("%d %s events in %+v", len(found), evType, r.events(id))
	}
	return found[0]
}

// noLastWords fails if any event of the instance kept last words.
func (r *rig) noLastWords(id string) {
	r.t.Helper()
	for _, e := range r.events(id) {
		if e.LastWords != nil {
			r.t.Fatalf("event %d (%s) kept last words: %+v", e.Seq, e.Type, e.LastWords)
		}
	}
}

// waitPrinted waits until the container has printed n lines, following
// its output (a running container's lines reach the engine's log after it
// is seen running).
func (r *rig) waitPrinted(inst container.Instance, n int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := 0
	errEnough := errors.New("enough")
	err := r.engine.Logs(ctx, runtime.RefOf(r.get(inst.ID)), runtime.LogOptions{Follow: true}, func(runtime.LogLine) error {
		if seen++; seen >= n {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		r.t.Fatalf("the container did not print %d lines (%d): %v", n, seen, err)
	}
}
