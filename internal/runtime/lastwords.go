package runtime

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berth-io/berth/internal/container"
)

// LastWordsTimeout bounds a read of last words (ReadLastWords): the state
// loop and the worker record a container's end without them rather than
// wait longer on a slow engine or API server.
const LastWordsTimeout = 5 * time.Second

// ReadLastWords reads the last lines the container ref names printed,
// bounded by container.LastWordsMaxLines and LastWordsMaxBytes, for the
// event that records its end. It is nil, without an error, when the
// container printed nothing or is gone (NotFound: nothing left to read).
// The read takes at most LastWordsTimeout. The lines are the owner's data:
// by the LogReader contract an error holds none of them, so a caller may
// log it.
func ReadLastWords(ctx context.Context, lr LogReader, ref Ref) (*container.LastWords, error) {
	ctx, cancel := context.WithTimeout(ctx, LastWordsTimeout)
	defer cancel()
	var c lastWordsCollector
	// One line more than kept tells whether there were more.
	err := lr.Logs(ctx, ref, LogOptions{Tail: container.LastWordsMaxLines + 1}, c.add)
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	return c.result(), nil
}

// LastWordsFrom returns the reader of last words from rt's containers
// (ReadLastWords, addressed by instance), the form manager.Observation and
// manager.Failure take; nil when rt cannot read logs.
func LastWordsFrom(rt Runtime) func(ctx context.Context, inst container.Instance) (*container.LastWords, error) {
	lr, ok := rt.(LogReader)
	if !ok {
		return nil
	}
	return func(ctx context.Context, inst container.Instance) (*container.LastWords, error) {
		return ReadLastWords(ctx, lr, RefOf(inst))
	}
}

// LastWords reads inst's container's last words (ReadLastWords) through
// its runtime. A runtime that cannot read logs is ErrInvalid.
func (r *Resolver) LastWords(ctx context.Context, inst container.Instance) (*container.LastWords, error) {
	rt, err := r.ForInstance(inst)
	if err != nil {
		return nil, err
	}
	read := LastWordsFrom(rt)
	if read == nil {
		return nil, Errorf(ErrInvalid, "last words", inst.ID, inst.RuntimeNodeName, "the %s runtime cannot read logs", rt.Kind())
	}
	return read(ctx, inst)
}

// lastWordsCollector keeps the last lines it is given within the bounds of
// container.LastWords, in memory that does not grow with the output.
type lastWordsCollector struct {
	lines     []container.OutputLine
	bytes     int
	truncated bool
	// partial holds, per stream, the kept end of a line whose pieces are
	// still coming (LogLine.Partial).
	partial map[LogStream][]byte
}

func (c *lastWordsCollector) add(l LogLine) error {
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
			c.partial = map[LogStream][]byte{}
		}
		c.partial[l.Stream] = append([]byte(nil), text...)
		return nil
	}
	c.push(l.Stream, text)
	return nil
}

// push appends a whole line and drops the oldest ones beyond the bounds.
func (c *lastWordsCollector) push(stream LogStream, text []byte) {
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
	for _, s := range []LogStream{"", LogStdout, LogStderr} {
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
