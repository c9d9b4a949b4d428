package startstop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Group is a Service made of services started in stages: every service of
// a stage is started (and has signalled Started) before the next stage
// starts. The group stops when its context ends, when Stop is called, or
// when one of its services fails (ends with an error, see Service.Err): it
// then stops the stages in the reverse order, the services of one stage all
// at once, and each stage has stopped before the stage before it is asked
// to. So the order of the stages is the process's shutdown order, read
// backwards: what must outlive something is in an earlier stage.
type Group struct {
	name   string
	log    *slog.Logger
	stages []stage

	mu       sync.Mutex
	running  bool // Start was called
	watching bool // the group runs: Stopped will be closed
	stop     chan struct{}
	stopOnce sync.Once
	started  chan struct{}
	stopped  chan struct{}
	err      error
}

type stage struct {
	name     string
	services []Service
}

var _ Service = (*Group)(nil)

// NewGroup returns an empty group; log (nil: slog.Default) has a line for
// each service stopped and for a failure that stops the group.
func NewGroup(name string, log *slog.Logger) *Group {
	if log == nil {
		log = slog.Default()
	}
	return &Group{name: name, log: log, stop: make(chan struct{}), started: make(chan struct{}), stopped: make(chan struct{})}
}

// Stage adds a stage after the others (so it is started after them and
// stopped before them). Stages are added before Start.
func (g *Group) Stage(name string, services ...Service) *Group {
	g.stages = append(g.stages, stage{name: name, services: services})
	return g
}

// Service is the group's service of that name, nil if there is none: how a
// test reaches one service's signals.
func (g *Group) Service(name string) Service {
	for _, st := range g.stages {
		for _, s := range st.services {
			if s.Name() == name {
				return s
			}
		}
	}
	return nil
}

// Name is the name given to NewGroup.
func (g *Group) Name() string { return g.name }

// Start starts the stages in order and returns once every service has
// started. The services get ctx without its cancellation: they stop when the
// group stops them, in order, not all at once when ctx ends. When a service
// cannot start, those already started are stopped and the error returned.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	if g.running {
		g.mu.Unlock()
		return fmt.Errorf("service group %s: started twice", g.name)
	}
	g.running = true
	g.mu.Unlock()

	n := 0
	for _, st := range g.stages {
		n += len(st.services)
	}
	failed := make(chan error, n) // never blocks a watcher
	svcCtx := context.WithoutCancel(ctx)
	for i, st := range g.stages {
		for _, s := range st.services {
			if err := s.Start(svcCtx); err != nil {
				g.stopStages(i)
				return fmt.Errorf("starting %s (%s): %w", s.Name(), st.name, err)
			}
			go func() {
				<-s.Stopped()
				if err := s.Err(); err != nil {
					failed <- fmt.Errorf("%s: %w", s.Name(), err)
				}
			}()
		}
		for _, s := range st.services {
			<-s.Started()
		}
	}
	g.mu.Lock()
	g.watching = true
	g.mu.Unlock()
	close(g.started)
	go g.supervise(ctx, failed)
	return nil
}

// supervise waits for the reason to stop, stops every stage and records
// the first failure.
func (g *Group) supervise(ctx context.Context, failed <-chan error) {
	var err error
	select {
	case <-ctx.Done():
	case <-g.stop:
	case err = <-failed:
		g.log.Error("service failed; stopping the others", "group", g.name, "error", err)
	}
	g.stopStages(len(g.stages) - 1)
	if err == nil {
		// One that failed while it was being stopped.
		select {
		case err = <-failed:
		default:
		}
	}
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
	close(g.stopped)
}

// stopStages stops stages last down to 0, each stage's services at once.
func (g *Group) stopStages(last int) {
	for i := last; i >= 0; i-- {
		var wg sync.WaitGroup
		for _, s := range g.stages[i].services {
			wg.Go(func() {
				s.Stop()
				g.log.Debug("service stopped", "group", g.name, "stage", g.stages[i].name, "service", s.Name())
			})
		}
		wg.Wait()
	}
}

// Stop stops the group and waits until every service has stopped. Called
// before Start has returned, it does not wait: the group stops as soon as
// it has started.
func (g *Group) Stop() {
	g.stopOnce.Do(func() { close(g.stop) })
	g.mu.Lock()
	watching := g.watching
	g.mu.Unlock()
	if watching {
		<-g.stopped
	}
}

// Run starts the group, waits until it has stopped (ctx ended, or a
// service failed) and returns the failure, nil when ctx ended.
func (g *Group) Run(ctx context.Context) error {
	if err := g.Start(ctx); err != nil {
		return err
	}
	<-g.stopped
	return g.Err()
}

// Started is closed once every service has started.
func (g *Group) Started() <-chan struct{} { return g.started }

// Stopped is closed once every service has stopped.
func (g *Group) Stopped() <-chan struct{} { return g.stopped }

// Err is the first failure of a service, "<name>: <its error>"; nil when
// the group was stopped.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
