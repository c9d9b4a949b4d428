package manager

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/runtime"
)

// LogSource reads what an instance's container printed, under the
// runtime.LogReader contract (runtime.Resolver.Logs). The manager reads a
// container's last words through it; only processes that hold runtime
// clients have one (berth serve, the worker and reconciler functions), so
// the api function's manager keeps none.
type LogSource interface {
	Logs(ctx context.Context, inst container.Instance, opts runtime.LogOptions, fn func(runtime.LogLine) error) error
}

var _ LogSource = (*runtime.Resolver)(nil)

// PolicyRequested ends the status reason of a stop or delete that a group
// policy (node or group) requested, as the worker's cleanup writes it: such
// a member's last words are kept with its end (RequestedByPolicy).
const PolicyRequested = " requested by the group's cleanup policy"

// RequestedByPolicy reports whether inst's stop or delete in progress was
// requested by a group policy rather than by a user.
func RequestedByPolicy(inst container.Instance) bool {
	return strings.HasSuffix(inst.StatusReason, PolicyRequested)
}

// keepsLastWords reports whether the end an observation records keeps the
// container's last words: a failure of the container's own (a non-zero
// exit, an OOM kill) or the end of a stop a group policy requested. A
// container destroyed has no output left to read.
func keepsLastWords(inst container.Instance, to fsm.Status, ob Observation) bool {
	if ob.Kind != ObservedExited {
		return false
	}
	return to == fsm.Failed || inst.Status == fsm.Stopping && RequestedByPolicy(inst)
}

// DefaultLastWordsTimeout is Options.LastWordsTimeout's default: how long
// the read of a container's last words may take before the event is
// recorded without them.
const DefaultLastWordsTimeout = 5 * time.Second

// LastWords reads the last lines inst's container printed, bounded by
// container.LastWordsMaxLines and LastWordsMaxBytes, for the event that
// records its end. It returns nil when the manager has no LogSource, the
// container printed nothing or is gone, or the read failed or took longer
// than LastWordsTimeout: the end is recorded either way. The lines are the
// owner's data and are never logged; a failure is logged by its error,
// which by the LogReader contract holds none.
func (m *Manager) LastWords(ctx context.Context, inst container.Instance) *container.LastWords {
	if m.logs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.lastWordsTimeout)
	defer cancel()
	var c lastWordsCollector
	// One line more than kept tells whether there were more.
	err := m.logs.Logs(ctx, inst, runtime.LogOptions{Tail: container.LastWordsMaxLines + 1}, c.add)
	if err != nil && !runtime.IsNotFound(err) {
		m.log.WarnContext(ctx, "last words not read; the end is recorded without them", "instance_id", inst.ID, "error", err)
		return nil
	}
	return c.result()
}

// lastWordsCollector keeps the last lines it is given within the bounds of
// container.LastWords, in memory that does not grow with the output.
type lastWordsCollector struct {
	lines     []container.OutputLine
	bytes     int
	truncated bool
	// partial holds, per stream, the kept end of a line whose pieces are
	// still coming (runtime.LogLine.Partial).
	partial map[runtime.LogStream][]byte
}

func (c *lastWordsCollector) add(l runtime.LogLine) error {
	text := l.Text
	if p, ok := c.partial[l.Stream]; ok {
		text = append(p, text...)
		delete(c.partial, l.Stream)
	}
	if len(text) > container.LastWordsMaxBytes {
		// Only the end of the line can be kept: it is what was printed last.
		text = append([]byte(nil), text[len(text)-container.LastWordsMaxBytes:]...)
		c.truncated = true
	}
	if l.Partial {
		if c.partial == nil {
			c.partial = map[runtime.LogStream][]byte{}
		}
		c.partial[l.Stream] = append([]byte(nil), text...)
		return nil
	}
	c.push(l.Stream, text)
	return nil
}

// push appends a whole line and drops the oldest ones beyond the bounds.
func (c *lastWordsCollector) push(stream runtime.LogStream, text []byte) {
	line := container.OutputLine{Stream: string(stream), Text: validTail(text)}
	c.lines = append(c.lines, line)
	c.bytes += len(line.Text)
	for len(c.lines) > container.LastWordsMaxLines || (c.bytes > container.LastWordsMaxBytes && len(c.lines) > 1) {
		c.bytes -= len(c.lines[0].Text)
		c.lines = c.lines[1:]
		c.truncated = true
	}
	if c.bytes > container.LastWordsMaxBytes {
		// One line alone over the bound (U+FFFD widened it): keep its end.
		c.lines[0].Text = validTail([]byte(c.lines[0].Text[len(c.lines[0].Text)-container.LastWordsMaxBytes:]))
		c.bytes = len(c.lines[0].Text)
		c.truncated = true
	}
}

// result is what was collected, with a line still in pieces as it stands;
// nil when nothing was printed.
func (c *lastWordsCollector) result() *container.LastWords {
	for _, s := range []runtime.LogStream{"", runtime.LogStdout, runtime.LogStderr} {
		if p, ok := c.partial[s]; ok {
			c.push(s, p)
		}
	}
	if len(c.lines) == 0 {
		return nil
	}
	return &container.LastWords{Lines: c.lines, Truncated: c.truncated}
}

// validTail is text as valid UTF-8: a character cut at its start (the
// line's start was dropped) goes, other invalid bytes become U+FFFD.
func validTail(text []byte) string {
	for i := 0; i < utf8.UTFMax-1 && len(text) > 0 && !utf8.RuneStart(text[0]); i++ {
		text = text[1:]
	}
	return strings.ToValidUTF8(string(text), "\uFFFD")
}
