package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/berth-io/berth/internal/runtime"
)

var _ runtime.Execer = (*Runtime)(nil)

// killTimeout bounds the second exec that kills a timed-out command's
// processes (runtime.ExecKillScript).
const killTimeout = 10 * time.Second

// Exec runs spec in ref's Pod's main container (see runtime.Execer)
// through the pods/exec subresource: the API server hands the streams to
// the node's kubelet (WebSocket, or SPDY for older servers), stdout and
// stderr apart, each read into a bounded buffer. The exec API takes no
// environment, so the command runs under env(1) with spec's variables and
// the exec's marker: the image needs env, and /bin/sh for the kill at the
// timeout (a second exec, runtime.ExecKillScript: closing the streams
// leaves the process running). kwok's nodes have no kubelet that serves
// exec: there the API server's proxying fails and Exec is ErrUnavailable.
func (r *Runtime) Exec(ctx context.Context, ref runtime.Ref, spec runtime.ExecSpec) (runtime.ExecResult, error) {
	cl, pod, err := r.locate(ctx, "exec", ref)
	if err != nil {
		return runtime.ExecResult{}, err
	}
	node := cl.cfg.Name
	if cs := mainStatus(pod); pod.DeletionTimestamp != nil || cs == nil || cs.State.Running == nil {
		return runtime.ExecResult{}, runtime.Errorf(runtime.ErrConflict, "exec", ref.InstanceID, node, "the container is not running")
	}
	cmd := append(append([]string{"env"}, runtime.ExecEnv(spec)...), spec.Command...)
	stdout := &runtime.BoundedBuffer{Limit: spec.OutputLimit}
	stderr := &runtime.BoundedBuffer{Limit: spec.OutputLimit}
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	code, err := cl.stream(runCtx, pod.Name, cmd, spec.Stdin, stdout, stderr)
	res := runtime.ExecResult{ExitCode: code, Duration: time.Since(start)}
	if err != nil && runCtx.Err() == nil {
		return runtime.ExecResult{}, classify(err, "exec", ref.InstanceID, node)
	}
	if err != nil {
		res.ExitCode, res.TimedOut = -1, true
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		res.KillFailed = cl.killExec(kctx, pod.Name, spec.Marker) != nil
		kcancel()
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	return res, nil
}

// ExecRequest is the pods/exec request berth makes to run cmd in pod's
// main container: a POST of the subresource with the command, the
// container and the streams as query parameters (stdin only when there is
// input). Exported for the test that records what reaches the kubelet.
func ExecRequest(rc rest.Interface, namespace, pod string, cmd []string, stdin bool) *rest.Request {
	return rc.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: containerName, Command: cmd, Stdin: stdin, Stdout: true, Stderr: true, TTY: false,
		}, scheme.ParameterCodec)
}

// stream runs cmd and copies its streams: the exit code (0 when the
// command succeeded), or an error that is not an exit.
func (c *cluster) stream(ctx context.Context, pod string, cmd []string, stdin []byte, stdout, stderr *runtime.BoundedBuffer) (int, error) {
	cs, err := c.client(ctx)
	if err != nil {
		return 0, runtime.NewError(runtime.ErrUnavailable, "exec", "", c.cfg.Name, err)
	}
	rc, err := c.restConfig(ctx)
	if err != nil {
		return 0, err
	}
	req := ExecRequest(cs.CoreV1().RESTClient(), c.cfg.Namespace, pod, cmd, stdin != nil)
	ex, err := executor(rc, req)
	if err != nil {
		return 0, err
	}
	opts := remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}
	if stdin != nil {
		opts.Stdin = bytes.NewReader(stdin)
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitStatus(), nil
	}
	return 0, err
}

// executor speaks WebSocket to the API server, falling back to SPDY where
// the server cannot upgrade to it (as kubectl does).
func executor(rc *rest.Config, req *rest.Request) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(rc, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("exec over websocket: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(rc, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("exec over spdy: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// killExec kills the processes that carry marker in pod's main container
// (runtime.ExecKillScript), as a second exec.
func (c *cluster) killExec(ctx context.Context, pod, marker string) error {
	var out bytes.Buffer
	code, err := c.stream(ctx, pod, runtime.ExecKillScript(marker), nil,
		&runtime.BoundedBuffer{Limit: 4096}, &runtime.BoundedBuffer{Limit: 4096})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("the kill of the timed-out command exited %d: %s", code, out.String())
	}
	return nil
}
