package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.LogReader = (*Runtime)(nil)

// Logs reads the Pod's container output through the API server (GET
// pods/log, which the Role grants), always with the kubelet's timestamps so
// every line has its time.
//
// The kubelet hands both streams over mixed unless the cluster enables the
// alpha PodLogsQuerySplitStreams gate (off by default up to 1.37 and on
// EKS), and a cluster without it silently ignores a request for one
// stream: so lines carry no stream (LogLine.Stream is empty) and asking
// for one stream alone is ErrInvalid, rather than answering stdout with
// stderr mixed in.
func (r *Runtime) Logs(ctx context.Context, ref runtime.Ref, opts runtime.LogOptions, fn func(runtime.LogLine) error) error {
	if opts.Stream != "" && opts.Stream != runtime.LogBoth {
		return runtime.Errorf(runtime.ErrInvalid, "logs", ref.InstanceID, ref.Node,
			"kubernetes returns stdout and stderr together: ask for both")
	}
	cl, pod, err := r.locate(ctx, "logs", ref)
	if err != nil {
		return err
	}
	po := &corev1.PodLogOptions{Container: containerName, Follow: opts.Follow, Timestamps: true}
	if opts.Tail > 0 {
		n := int64(opts.Tail)
		po.TailLines = &n
	}
	if !opts.Since.IsZero() {
		// sinceTime travels as RFC 3339 in whole seconds: ask from the
		// second and drop the earlier lines here.
		st := metav1.NewTime(opts.Since.Truncate(time.Second))
		po.SinceTime = &st
	}
	node := nodeName(cl, pod)
	pods, err := r.pods(ctx, cl, "logs", ref)
	if err != nil {
		return err
	}
	body, err := pods.GetLogs(pod.Name, po).Stream(ctx)
	if err != nil {
		if apierrors.IsBadRequest(err) {
			// "container … is waiting to start": there is nothing to read yet.
			return runtime.NewError(runtime.ErrConflict, "logs", ref.InstanceID, node, err)
		}
		return classify(err, "logs", ref.InstanceID, node)
	}
	defer body.Close()
	if err := readTimestamped(body, opts.Since, fn); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("logs of %s: %w", ref.InstanceID, ctx.Err())
		}
		var cb *callbackError
		if errors.As(err, &cb) {
			return cb.err
		}
		return runtime.NewError(runtime.ErrUnavailable, "logs", ref.InstanceID, node, err)
	}
	return nil
}

// callbackError carries the caller's own error through readTimestamped,
// so it is returned unclassified.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// readTimestamped reads the kubelet's "TIMESTAMP SP text NL" lines, holding
// at most one buffer of MaxLogLine (a longer line is passed on in pieces),
// and skips lines before since.
func readTimestamped(body io.Reader, since time.Time, fn func(runtime.LogLine) error) error {
	a := &runtime.LineAssembler{Emit: func(l runtime.LogLine) error {
		if !since.IsZero() && l.Time.Before(since) {
			return nil
		}
		if err := fn(l); err != nil {
			return &callbackError{err}
		}
		return nil
	}}
	br := bufio.NewReaderSize(body, runtime.MaxLogLine)
	for {
		ts, err := br.ReadSlice(' ')
		if errors.Is(err, io.EOF) && len(ts) == 0 {
			return a.Flush()
		}
		if err != nil {
			return fmt.Errorf("reading a log line's timestamp: %w", err)
		}
		at, err := time.Parse(time.RFC3339Nano, string(ts[:len(ts)-1]))
		if err != nil {
			return fmt.Errorf("a log line's timestamp: %w", err)
		}
		for {
			chunk, err := br.ReadSlice('\n')
			if werr := a.Write(at, chunk); werr != nil {
				return werr
			}
			if err == nil {
				break
			}
			if errors.Is(err, io.EOF) {
				return a.Flush()
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return fmt.Errorf("reading a log line: %w", err)
			}
		}
	}
}
