package runtime

import (
	"bytes"
	"context"
	"time"
)

// LogStream is one of a container's output streams.
type LogStream string

// The streams a container writes. LogBoth selects both in LogOptions; a
// LogLine always names the one it came from, except on a runtime that
// cannot tell them apart (see LogLine.Stream).
const (
	LogStdout LogStream = "stdout"
	LogStderr LogStream = "stderr"
	LogBoth   LogStream = "both"
)

// MaxLogLine is the most a LogLine carries: a longer line is delivered in
// pieces of at most this many bytes, every piece but the last marked
// Partial, so that reading a line never holds more than this in memory.
const MaxLogLine = 64 << 10

// LogOptions select what Logs reads.
type LogOptions struct {
	// Tail, when above zero, reads only the last Tail lines (of those
	// Since selects). Zero reads every line the runtime kept.
	Tail int
	// Since, when set, skips lines written before it (a line written at
	// Since exactly is kept).
	Since time.Time
	// Stream is LogStdout, LogStderr or LogBoth; empty means LogBoth.
	Stream LogStream
	// Follow keeps reading after the last line until the container ends
	// or ctx is done.
	Follow bool
}

// Streams reports which streams o selects.
func (o LogOptions) Streams() (stdout, stderr bool) {
	switch o.Stream {
	case LogStdout:
		return true, false
	case LogStderr:
		return false, true
	}
	return true, true
}

// LogLine is one line a container printed, without its newline.
type LogLine struct {
	// Stream is where the line was written. It is empty when the runtime
	// mixes the streams before berth sees them (Kubernetes, unless the
	// cluster splits them: see the kubernetes package).
	Stream LogStream
	// Time is when the runtime received the line (its first piece).
	Time time.Time
	// Text is the line's bytes as the runtime kept them (Docker's json-file
	// driver keeps invalid UTF-8 as U+FFFD). It is valid only until the
	// callback returns: copy it to keep it.
	Text []byte
	// Partial marks a piece of a line longer than MaxLogLine: the next
	// line of the same stream goes on with it.
	Partial bool
}

// LogReader reads what a container printed. It is a separate interface
// from Runtime, declared here because every runtime implements it and the
// conformance suite holds them to one contract:
//
//   - Lines come in the order the runtime kept them, each to fn as soon as
//     it is read; nothing but the line being assembled is held, so the
//     memory a call uses does not grow with the output (at most about
//     MaxLogLine per stream).
//   - fn's error stops the read and is returned as is (wrapped with %w).
//   - A container that printed nothing yields no line and no error.
//   - A missing object is ErrNotFound; other failures take the kinds of
//     the Runtime contract.
//   - Log lines are the user's data: an implementation never logs them
//     and puts none in an error.
type LogReader interface {
	Logs(ctx context.Context, ref Ref, opts LogOptions, fn func(LogLine) error) error
}

// LineAssembler turns the pieces of one stream's output into lines no
// longer than MaxLogLine. Runtimes feed it what they read; it calls emit
// for every full line and for every MaxLogLine piece of a longer one.
type LineAssembler struct {
	Stream LogStream
	Emit   func(LogLine) error

	buf     []byte
	started time.Time // the time of the line's first piece
	pending bool      // buf holds the start of a line
}

// Write adds a piece of output received at t. The piece may hold several
// lines, a line's end or a line's middle.
func (a *LineAssembler) Write(t time.Time, p []byte) error {
	for len(p) > 0 {
		if !a.pending {
			a.started, a.pending = t, true
		}
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := MaxLogLine - len(a.buf)
		if len(chunk) > room {
			// Fill this piece, send it as partial, and go on with the rest
			// of the same line (its time stays the line's first).
			a.buf = append(a.buf, chunk[:room]...)
			if err := a.emit(true); err != nil {
				return err
			}
			a.pending = true
			p = p[room:]
			continue
		}
		a.buf = append(a.buf, chunk...)
		if i < 0 {
			return nil
		}
		if err := a.emit(false); err != nil {
			return err
		}
		p = p[i+1:]
	}
	return nil
}

// Flush sends a last line that had no newline, if any.
func (a *LineAssembler) Flush() error {
	if !a.pending {
		return nil
	}
	return a.emit(false)
}

func (a *LineAssembler) emit(partial bool) error {
	line := LogLine{Stream: a.Stream, Time: a.started, Text: a.buf, Partial: partial}
	a.buf, a.pending = a.buf[:0], false
	return a.Emit(line)
}
