package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.LogReader = (*Runtime)(nil)

// Logs reads the container's output through the Engine API, always with
// the engine's timestamps (so every line has its time), and takes the
// multiplexed stream apart frame by frame: nothing is buffered beyond the
// frame being read and the line being assembled.
func (r *Runtime) Logs(ctx context.Context, ref runtime.Ref, opts runtime.LogOptions, fn func(runtime.LogLine) error) error {
	h, name, err := r.locate(ctx, "logs", ref)
	if err != nil {
		return err
	}
	stdout, stderr := opts.Streams()
	o := client.ContainerLogsOptions{ShowStdout: stdout, ShowStderr: stderr, Timestamps: true, Follow: opts.Follow}
	if opts.Tail > 0 {
		o.Tail = strconv.Itoa(opts.Tail)
	}
	if !opts.Since.IsZero() {
		// The engine's own form (seconds.nanoseconds), so no precision is lost.
		o.Since = fmt.Sprintf("%d.%09d", opts.Since.Unix(), opts.Since.Nanosecond())
	}
	body, err := h.cli.ContainerLogs(ctx, name, o)
	if err != nil {
		return classify(err, "logs", ref.InstanceID, h.cfg.Name)
	}
	defer body.Close()
	if err := demux(body, fn); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("logs of %s: %w", ref.InstanceID, ctx.Err())
		}
		var cb *callbackError
		if errors.As(err, &cb) {
			return cb.err
		}
		return runtime.NewError(runtime.ErrUnavailable, "logs", ref.InstanceID, h.cfg.Name, err)
	}
	return nil
}

// callbackError carries the caller's own error through demux, so it is
// returned unclassified.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// maxFrameRead is how much of a frame is read at once: a frame is one log
// message (the engine splits lines at 16 KiB), but a larger one is read in
// pieces rather than trusted with its length.
const maxFrameRead = 32 << 10

// demux reads the Engine API's multiplexed log stream: frames of an 8-byte
// header (stream, 3 zero bytes, big-endian length) and a payload that is
// one log message, "TIMESTAMP SP text". A message without a trailing
// newline is a piece of a longer line; the next message of its stream goes
// on with it (its own timestamp dropped), which is how the engine reports
// lines it split.
func demux(body io.Reader, fn func(runtime.LogLine) error) error {
	emit := func(l runtime.LogLine) error {
		if err := fn(l); err != nil {
			return &callbackError{err}
		}
		return nil
	}
	streams := [3]*runtime.LineAssembler{
		1: {Stream: runtime.LogStdout, Emit: emit},
		2: {Stream: runtime.LogStderr, Emit: emit},
	}
	br := bufio.NewReaderSize(body, maxFrameRead)
	var hdr [8]byte
	buf := make([]byte, maxFrameRead)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("reading a frame header: %w", err)
		}
		kind := hdr[0]
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		if kind != 1 && kind != 2 {
			// Stdin (0) never comes from logs; the engine's systemerr (3)
			// carries its own failure text, which is not the user's output.
			if _, err := io.CopyN(io.Discard, br, int64(size)); err != nil {
				return fmt.Errorf("skipping a frame: %w", err)
			}
			if kind == 3 {
				return errors.New("the engine reported an error in the log stream")
			}
			continue
		}
		a := streams[kind]
		first := true
		var at time.Time
		for size > 0 {
			n := min(size, len(buf))
			if _, err := io.ReadFull(br, buf[:n]); err != nil {
				return fmt.Errorf("reading a frame: %w", err)
			}
			size -= n
			p := buf[:n]
			if first {
				first = false
				sp := bytes.IndexByte(p, ' ')
				if sp < 0 {
					return errors.New("a log message without its timestamp")
				}
				t, err := time.Parse(time.RFC3339Nano, string(p[:sp]))
				if err != nil {
					return fmt.Errorf("a log message's timestamp: %w", err)
				}
				at, p = t, p[sp+1:]
			}
			if err := a.Write(at, p); err != nil {
				return err
			}
		}
	}
	for _, a := range streams[1:] {
		if err := a.Flush(); err != nil {
			return err
		}
	}
	return nil
}
