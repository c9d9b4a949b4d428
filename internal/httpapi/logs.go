package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/runtime"
)

// LogSource reads what an instance's container printed: berth serve makes
// one from its runtimes. The api function on AWS has none, since it holds
// no runtime client (its cold start and its IAM stay small), and the logs
// route answers 501 there. Its contract is runtime.LogReader's, addressed
// by instance: lines stream to fn; a container that does not exist on its
// runtime is runtime.ErrNotFound.
type LogSource interface {
	Logs(ctx context.Context, inst container.Instance, opts runtime.LogOptions, fn func(runtime.LogLine) error) error
}

// The bounds of one logs answer that does not follow. A larger log is
// served in pieces: a truncated answer carries NextSinceHeader, the time of
// the first line it left out, to send back as since= for the rest.
const (
	// DefaultLogsMaxLines is the most lines one answer holds, and the
	// largest tail= accepted.
	DefaultLogsMaxLines = 10000
	// DefaultLogsMaxBytes is the most bytes of lines (text and the
	// newline; NDJSON counts its encoded lines) one answer holds.
	DefaultLogsMaxBytes = 1 << 20
	// NextSinceHeader names the time to pass as since= for what a
	// truncated answer left out.
	NextSinceHeader = "Berth-Next-Since"
	// LogsFollowHeader says that a follow=true was answered with the
	// bounded answer instead of a stream (Options.LogsPolled): LogsFollowPoll
	// or LogsFollowEnded.
	LogsFollowHeader = "Berth-Follow"
	// LogsFollowPoll: ask again with since=<NextSinceHeader> for what
	// comes after.
	LogsFollowPoll = "poll"
	// LogsFollowEnded: the container had ended before the read, and the
	// answer holds every line after since: nothing more will come (a
	// streamed follow ends there too). The answer still carries its cursor.
	LogsFollowEnded = "ended"
	// ndjsonType is the media type of one JSON object per line.
	ndjsonType = "application/x-ndjson"
	// followFlushEvery is how long a followed line may wait in the
	// response's buffer: lines written in a burst leave together.
	followFlushEvery = 100 * time.Millisecond
)

// errLogsFull stops a read once the answer is full.
var errLogsFull = errors.New("the answer is full")

type logsQuery struct {
	opts       runtime.LogOptions
	timestamps bool
	ndjson     bool
}

func parseLogsQuery(r *http.Request, now time.Time) (logsQuery, error) {
	q := r.URL.Query()
	var lq logsQuery
	bad := func(field, msg string) error {
		return &badRequest{msg: field + ": " + msg, fields: fieldErr(field, msg)}
	}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > DefaultLogsMaxLines {
			return lq, bad("tail", "must be a number of lines from 1 to "+strconv.Itoa(DefaultLogsMaxLines))
		}
		lq.opts.Tail = n
	}
	if v := q.Get("since"); v != "" {
		var err error
		if lq.opts.Since, err = parseSince(v, now); err != nil {
			return lq, err
		}
	}
	switch v := q.Get("stream"); v {
	case "", string(runtime.LogBoth):
		lq.opts.Stream = runtime.LogBoth
	case string(runtime.LogStdout), string(runtime.LogStderr):
		lq.opts.Stream = runtime.LogStream(v)
	default:
		return lq, bad("stream", "must be stdout, stderr or both")
	}
	var err error
	if lq.timestamps, err = boolParam(q.Get("timestamps")); err != nil {
		return lq, bad("timestamps", err.Error())
	}
	if lq.opts.Follow, err = boolParam(q.Get("follow")); err != nil {
		return lq, bad("follow", err.Error())
	}
	switch f := q.Get("format"); f {
	case "ndjson":
		lq.ndjson = true
	case "text":
	case "":
		lq.ndjson = acceptsNDJSON(r.Header.Get("Accept"))
	default:
		return lq, bad("format", "must be text or ndjson")
	}
	return lq, nil
}

func boolParam(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("must be true or false")
	}
	return b, nil
}

// acceptsNDJSON: the client names NDJSON among the types it accepts.
func acceptsNDJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ndjsonType {
			return true
		}
	}
	return false
}

// logLineBody is one NDJSON line. Text that is not UTF-8 is encoded with
// U+FFFD in place of the bytes that are not (as encoding/json does).
type logLineBody struct {
	Stream  runtime.LogStream `json:"stream,omitempty"`
	Time    time.Time         `json:"time"`
	Line    string            `json:"line"`
	Partial bool              `json:"partial,omitempty"`
}

// appendLine renders one line in the answer's format.
func (lq logsQuery) appendLine(b []byte, l runtime.LogLine) []byte {
	if lq.ndjson {
		enc, _ := json.Marshal(logLineBody{Stream: l.Stream, Time: l.Time.UTC(), Line: string(l.Text), Partial: l.Partial})
		return append(append(b, enc...), '\n')
	}
	if lq.timestamps {
		b = l.Time.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(b, l.Text...)
	if !l.Partial {
		b = append(b, '\n')
	}
	return b
}

func (lq logsQuery) contentType() string {
	if lq.ndjson {
		return ndjsonType
	}
	return "text/plain; charset=utf-8"
}

func (h *handler) containerLogs(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	inst, err := h.m.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	lq, err := parseLogsQuery(r, time.Now())
	if err != nil {
		return err
	}
	if h.logs == nil {
		writeProblem(w, r, http.StatusNotImplemented, "Not Implemented",
			"container logs are served by berth serve, not by this deployment's API (see docs/api.md, Logs)", nil)
		return nil
	}
	polled := lq.opts.Follow && h.logsPolled
	if lq.opts.Follow && !polled {
		release, err := h.follows.acquire(c.User)
		if err != nil {
			return err
		}
		defer release()
		return h.followLogs(w, r, inst, lq)
	}
	lq.opts.Follow = false
	// The instance was read before its logs: once its end is recorded,
	// the runtime holds every line it will ever print.
	ended := polled && inst.Status.Terminal()
	// A polled follow's cursor when no line comes: any line written later
	// has a later time than this.
	next := lq.opts.Since
	if next.IsZero() {
		next = time.Now()
	}
	var out []byte
	lines := 0
	full := false
	err = h.logs.Logs(r.Context(), inst, lq.opts, func(l runtime.LogLine) error {
		before := len(out)
		out = lq.appendLine(out, l)
		if lines == DefaultLogsMaxLines || len(out) > DefaultLogsMaxBytes {
			out, next, full = out[:before], l.Time, true
			return errLogsFull
		}
		lines++
		// since keeps a line written at since exactly: the next poll
		// starts just after the last line sent.
		next = l.Time.Add(time.Nanosecond)
		return nil
	})
	if err != nil && !errors.Is(err, errLogsFull) {
		return logsError(inst, err)
	}
	w.Header().Set("Content-Type", lq.contentType())
	if polled {
		follow := LogsFollowPoll
		if ended && !full {
			follow = LogsFollowEnded
		}
		w.Header().Set(LogsFollowHeader, follow)
		full = true // a polled follow always carries its cursor
	}
	if !full {
		next = time.Time{}
	}
	if !next.IsZero() {
		w.Header().Set(NextSinceHeader, next.UTC().Format(time.RFC3339Nano))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}

// followLogs streams lines as they come until the container ends or the
// client leaves. The answer has begun once the first byte is out, so a
// failure after that can only end it.
func (h *handler) followLogs(w http.ResponseWriter, r *http.Request, inst container.Instance, lq logsQuery) error {
	rc := http.NewResponseController(w)
	// A follow outlives the server's write timeout by design.
	_ = rc.SetWriteDeadline(time.Time{})
	var (
		mu      sync.Mutex
		started bool
		dirty   bool
		buf     []byte
	)
	begin := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", lq.contentType())
			w.WriteHeader(http.StatusOK)
		}
	}
	// The flusher ends before the handler returns: a response may not be
	// touched after that.
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	defer func() {
		close(stop)
		flusher.Wait()
	}()
	flusher.Go(func() {
		tick := time.NewTicker(followFlushEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				if dirty {
					_ = rc.Flush()
					dirty = false
				}
				mu.Unlock()
			}
		}
	})
	err := h.logs.Logs(r.Context(), inst, lq.opts, func(l runtime.LogLine) error {
		buf = lq.appendLine(buf[:0], l)
		mu.Lock()
		defer mu.Unlock()
		begin()
		dirty = true
		_, err := w.Write(buf)
		return err
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil && !started {
		return logsError(inst, err)
	}
	begin()
	_ = rc.Flush()
	if err != nil && r.Context().Err() == nil {
		h.log.WarnContext(r.Context(), "a logs follow ended early", "request_id", RequestIDFrom(r.Context()),
			"instance_id", inst.ID, "error", err)
	}
	return nil
}

// logsError maps a runtime's failure to read logs to the API's errors.
// A runtime's messages may name hosts and engine internals: the caller
// sees only what kind of failure it was.
func logsError(inst container.Instance, err error) error {
	switch {
	case runtime.IsNotFound(err):
		return &logsProblem{status: http.StatusConflict, title: "Conflict", current: inst,
			detail: "the container does not exist on its runtime now (not created yet, or removed): it has no output to read"}
	case runtime.IsConflict(err):
		return &logsProblem{status: http.StatusConflict, title: "Conflict", current: inst,
			detail: "the container has not started yet: it has no output to read"}
	case runtime.IsInvalid(err):
		return &logsProblem{status: http.StatusUnprocessableEntity, title: "Unprocessable Content",
			detail: "this container's runtime cannot answer these options: " + invalidDetail(err)}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &logsProblem{status: http.StatusServiceUnavailable, title: "Service Unavailable",
		detail: "the container's runtime did not answer; retry later"}
}

// invalidDetail is the cause of an ErrInvalid from a runtime's own checks
// (never an engine's message).
func invalidDetail(err error) string {
	var re *runtime.Error
	if errors.As(err, &re) && re.Err != nil {
		return re.Err.Error()
	}
	return "refused"
}

// logsProblem is a logs failure as a problem response.
type logsProblem struct {
	status        int
	title, detail string
	current       container.Instance
}

func (e *logsProblem) Error() string { return e.detail }
