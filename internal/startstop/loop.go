package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Func is a service's body. It runs until ctx ends and then returns nil (or
// ctx's error, which is not a failure); any other error, or returning on its
// own, ends the service. A loop that works in passes calls passed at the end
// of each, which is what Loop.NextPass signals.
type Func func(ctx context.Context, passed func()) error

// Loop is a Service running a Func.
type Loop struct {
	name string
	run  Func

	mu      sync.Mutex
	cancel  context.CancelFunc // set by Start
	started chan struct{}
	stopped chan struct{}
	err     error
	pass    chan struct{} // closed at the end of the next pass
}

var _ Service = (*Loop)(nil)

// New returns the service name that runs run; Start starts it.
func New(name string, run Func) *Loop {
	return &Loop{name: name, run: run, started: make(chan struct{}), stopped: make(chan struct{}), pass: make(chan struct{})}
}

// Name is the name given to New.
func (l *Loop) Name() string { return l.name }

// Start runs the loop in a goroutine until Stop or ctx's end.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return fmt.Errorf("service %s: started twice", l.name)
	}
	ctx, l.cancel = context.WithCancel(ctx)
	go func() {
		close(l.started)
		err := l.run(ctx, l.passed)
		// ctx's own error is how a loop says it was stopped, not a failure.
		if err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) {
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
		}
		l.cancel()
		close(l.stopped)
	}()
	return nil
}

// Stop cancels the loop's context and waits for it to return.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-l.stopped
}

// Started is closed once the loop runs.
func (l *Loop) Started() <-chan struct{} { return l.started }

// Stopped is closed once the loop has returned.
func (l *Loop) Stopped() <-chan struct{} { return l.stopped }

// Err is the error the loop failed with, nil when it was stopped.
func (l *Loop) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// NextPass is closed when the next pass ends, for a test to wait on: take
// it, cause the pass, then receive from it.
func (l *Loop) NextPass() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pass
}

func (l *Loop) passed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.pass)
	l.pass = make(chan struct{})
}
