package runtime_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
)

// TestLineAssembler: pieces become lines, whatever the pieces' cuts; a
// line longer than MaxLogLine comes in pieces marked partial, all with
// the time of its first piece; a last line without a newline is flushed.
func TestLineAssembler(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	long := strings.Repeat("y", runtime.MaxLogLine+5)
	type got struct {
		text    string
		at      time.Time
		partial bool
	}
	cases := []struct {
		name   string
		pieces []string
		want   []got
	}{
		{"one piece, two lines", []string{"a\nb\n"}, []got{{"a", t0, false}, {"b", t0, false}}},
		{"a line over two pieces", []string{"he", "llo\n"}, []got{{"hello", t0, false}}},
		{"empty lines", []string{"\n\n"}, []got{{"", t0, false}, {"", t0, false}}},
		{"no final newline", []string{"x\ntail"}, []got{{"x", t0, false}, {"tail", t0, false}}},
		{"exactly MaxLogLine", []string{long[:runtime.MaxLogLine], "\n"}, []got{{long[:runtime.MaxLogLine], t0, false}}},
		{"over MaxLogLine", []string{long[:10], long[10:] + "\nz\n"},
			[]got{{long[:runtime.MaxLogLine], t0, true}, {long[runtime.MaxLogLine:], t0, false}, {"z", t0.Add(time.Second), false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out []got
			a := &runtime.LineAssembler{Stream: runtime.LogStdout, Emit: func(l runtime.LogLine) error {
				if l.Stream != runtime.LogStdout {
					t.Errorf("stream %q", l.Stream)
				}
				out = append(out, got{string(l.Text), l.Time, l.Partial})
				return nil
			}}
			for i, p := range c.pieces {
				// Each piece arrives a second after the last: a line keeps
				// the time of its first piece.
				if err := a.Write(t0.Add(time.Duration(i)*time.Second), []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(out) != len(c.want) {
				t.Fatalf("%d lines, want %d", len(out), len(c.want))
			}
			for i := range out {
				if out[i].text != c.want[i].text || !out[i].at.Equal(c.want[i].at) || out[i].partial != c.want[i].partial {
					t.Errorf("line %d: %d bytes %v %v, want %d bytes %v %v", i, len(out[i].text), out[i].at, out[i].partial,
						len(c.want[i].text), c.want[i].at, c.want[i].partial)
				}
			}
		})
	}
	stop := errors.New("stop")
	a := &runtime.LineAssembler{Emit: func(runtime.LogLine) error { return stop }}
	if err := a.Write(t0, []byte("a\nb\n")); !errors.Is(err, stop) {
		t.Errorf("an Emit error: %v", err)
	}
}
