package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/console"
	"github.com/berth-io/berth/internal/expiry"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/imagestatus"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/metrics/promsink"
	"github.com/berth-io/berth/internal/monitor"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/configured"
	"github.com/berth-io/berth/internal/runtime/docker"
	"github.com/berth-io/berth/internal/secrets"
	"github.com/berth-io/berth/internal/startstop"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/boltstore"
	"github.com/berth-io/berth/internal/wiring"
	"github.com/berth-io/berth/internal/worker"
)

// serveFlags are `berth serve`'s flags; each overrides its config key.
type serveFlags struct {
	config    string
	addr      string
	data      string
	templates string
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "", "config file (default ./config.yml if present)")
	fs.StringVar(&f.addr, "addr", "", "listen address (default server.addr, 127.0.0.1:8080)")
	fs.StringVar(&f.data, "data", "", "data directory for the embedded store (default server.data_dir, ./.berth)")
	fs.StringVar(&f.templates, "templates", "", "directory of template JSON files (<name>.json) to put at start, as the admin")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: berth serve [--config FILE] [--addr HOST:PORT] [--data DIR] [--templates DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return f, fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if f.config == "" {
		if _, err := os.Stat("config.yml"); err == nil {
			f.config = "config.yml"
		}
	}
	return f, nil
}

// runServe runs the local server until ctx ends (SIGINT/SIGTERM).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return 2
	}
	cfg, err := config.Load(f.config, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "berth serve: %v\n", err)
		return 1
	}
	if f.addr != "" {
		cfg.Server.Addr = f.addr
	}
	if f.data != "" {
		cfg.Server.DataDir = f.data
		cfg.Store.BoltPath = filepath.Join(f.data, "berth.db")
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := newServer(ctx, cfg, f.config, log, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "berth serve: %v\n", err)
		return 1
	}
	if f.templates != "" {
		if err := srv.putTemplates(ctx, f.templates); err != nil {
			srv.close()
			fmt.Fprintf(stderr, "berth serve: %v\n", err)
			return 1
		}
	}
	if err := srv.run(ctx); err != nil {
		fmt.Fprintf(stderr, "berth serve: %v\n", err)
		return 1
	}
	return 0
}

// server is the local all-in-one: the same manager, workers, runtime and
// API as in AWS, with an embedded store, in-process queues, an outbox
// watcher instead of Streams and tickers instead of EventBridge.
type server struct {
	cfg        *config.Config
	configPath string
	log        *slog.Logger
	out        io.Writer

	store      *boltstore.Store
	manager    *manager.Manager
	rts        *configured.Runtimes // Docker, Kubernetes, both or none
	runtimes   *runtime.Resolver
	queues     map[outbox.QueueName]*memqueue.Queue
	dispatcher *outbox.Dispatcher
	handover   *outbox.Handover
	watcher    *outbox.Watcher
	expiry     *expiry.Timers
	worker     *worker.Worker
	slots      *worker.Slots
	metrics    *metrics.Emitter // EMF lines, and GET /metrics
	listener   net.Listener
	http       *http.Server

	mu     sync.Mutex
	images []docker.ImageStatus
}

// closerFunc is a func() as an io.Closer, for newServer's cleanup list.
type closerFunc func()

// Close calls f.
func (f closerFunc) Close() error { f(); return nil }

func newServer(ctx context.Context, cfg *config.Config, configPath string, log *slog.Logger, out io.Writer) (_ *server, err error) {
	s := &server{cfg: cfg, configPath: configPath, log: log, out: out}
	if cfg.Store.Backend != config.StoreBolt {
		return nil, fmt.Errorf("berth serve runs on the embedded store (store.backend: bolt), not %q", cfg.Store.Backend)
	}
	if cfg.Queue.Backend != config.QueueMemory {
		return nil, fmt.Errorf("berth serve runs on in-process queues (queue.backend: memory), not %q", cfg.Queue.Backend)
	}
	// One cleanup for every failure below: it closes what was opened so far.
	var opened []io.Closer
	defer func() {
		if err != nil {
			for _, c := range slices.Backward(opened) {
				_ = c.Close()
			}
		}
	}()
	if err := os.MkdirAll(filepath.Dir(cfg.Store.BoltPath), 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	st, err := boltstore.Open(cfg.Store.BoltPath, boltstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the store %s: %w", cfg.Store.BoltPath, err)
	}
	s.store = st
	opened = append(opened, st)
	// Every metric feeds GET /metrics (the sink), and the EMF lines too
	// when server.metrics asks for them.
	sink := promsink.New()
	emf := metrics.New(io.Discard, nil, sink)
	if cfg.Server.Metrics == config.MetricsStdout {
		emf = metrics.New(out, map[string]string{"Service": "berth-local"}, sink)
	}
	s.metrics = emf

	if s.rts, err = configured.Build(cfg, log, nil); err != nil {
		return nil, err
	}
	opened = append(opened, closerFunc(s.rts.Close))
	if s.runtimes, err = s.rts.Resolver(); err != nil {
		return nil, err
	}

	// Visibility must outlast the longest operation, or a message still
	// being worked on would be delivered again: a create holds its message
	// until the container is stable or the start timeout passes.
	visibility := max(cfg.Queue.VisibilityTimeout, cfg.Container.CreateStartTimeout+time.Minute)
	s.queues = map[outbox.QueueName]*memqueue.Queue{}
	queues := map[outbox.QueueName]queue.Queue{}
	for _, name := range []outbox.QueueName{outbox.CreateQueue, outbox.LifecycleQueue, outbox.NotifyQueue} {
		// Owners take turns: one owner's queued creates do not delay
		// another's one by all of them (the create consumers receive only
		// as many as they have slots, so the order received is the order
		// carried out).
		q := memqueue.New(memqueue.Options{Name: string(name), VisibilityTimeout: visibility, MaxReceives: cfg.Container.MaxAttempts,
			FairBy: outbox.AttrOwner})
		s.queues[name] = q
		queues[name] = q
	}
	// The dispatcher remembers what it handed to the in-process queues
	// instead of writing a dispatch mark: the worker's claim writes it, so
	// a create costs one fsync fewer (outbox.Handover says why nothing is
	// lost).
	s.handover = outbox.NewHandover(st)
	s.dispatcher = &outbox.Dispatcher{Queues: queues, Store: s.handover, Metrics: emf, Logger: log}
	s.watcher = outbox.NewWatcher(s.dispatcher, outbox.WatcherOptions{SweepEvery: cfg.Container.OutboxSweepAfter, Logger: log})

	// Every committed outbox item wakes the watcher: dispatch is
	// event-driven, the sweep only a safety net.
	mo := wiring.ManagerOptions(cfg, st, log, emf)
	// Every commit also tells the lifetime timers when berth acts on its
	// instance next, its expiry or its retention (internal/expiry): armed
	// on the write, not by a poll.
	var timers *expiry.Timers
	mo.OnCommit = func(c store.Commit) {
		s.handover.Committed(c)
		s.watcher.Committed(c)
		timers.Note(c.InstanceID, c.Deadline)
	}
	s.manager = manager.New(mo)
	timers = expiry.New(expiry.Options{Expirer: s.manager, Store: st, Logger: log})
	s.expiry = timers
	s.slots = worker.NewSlots(cfg.Container.CreateQueueMaxConcurrency)
	wo := wiring.WorkerOptions(cfg, s.manager, st, s.runtimes, log, emf)
	wo.CreateSlots = s.slots
	wo.Webhooks = wiring.WebhookDeliverer(cfg, st, &webhook.LocalLimiter{})
	if cfg.Webhooks.EventBus != "" {
		awsCfg, err := wiring.AWSConfig(ctx, cfg.Store.Region)
		if err != nil {
			return nil, fmt.Errorf("webhooks.event_bus: %w", err)
		}
		wo.EventBus = wiring.EventBus(cfg, awsCfg)
	}
	if wo.Secrets, err = secrets.New(cfg.Secrets, os.LookupEnv, nil); err != nil {
		return nil, err
	}
	s.worker = worker.New(wo)

	auth, mode := s.authenticator()
	endpoint, err := s.metricsEndpoint(sink)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	handler := httpapi.New(httpapi.Options{
		Manager: s.manager, Auth: auth, Logger: log, BodyLimit: cfg.Server.RequestBodyLimit,
		WaitMax: cfg.Server.WaitMax, MaxWaiters: cfg.Server.MaxWaiters,
		MaxWaitersPerCaller: cfg.Server.MaxWaitersPerCaller, Health: s.health,
		MaxFollows: cfg.Server.MaxFollows, MaxFollowsPerCaller: cfg.Server.MaxFollowsPerCaller,
		Logs: s.runtimes, Stats: s.runtimes, Console: console.OptionsFrom(cfg.Auth),
		Exec:            httpapi.ExecOptionsFrom(cfg.Server, s.runtimes, 0),
		MetricsEndpoint: endpoint, MetricsToken: cfg.Server.MetricsToken.Reveal(), Metrics: emf,
	})
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.Server.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Server.Addr, err)
	}
	s.listener = ln
	s.http = newHTTPServer(cfg.Server, handler, log)
	s.printStartup(mode)
	return s, nil
}

// putTemplates stores every <name>.json of dir through the manager (so
// each is validated as an API PUT would be), replacing what is there.
func (s *server) putTemplates(ctx context.Context, dir string) error {
	tpls, err := readTemplates(dir)
	if err != nil {
		return err
	}
	for _, t := range tpls {
		if _, _, err := s.manager.PutTemplate(ctx, identity.Caller{User: "berth-serve", Admin: true}, t); err != nil {
			return fmt.Errorf("template %s in %s: %w", t.Name, dir, err)
		}
		fmt.Fprintf(s.out, "  template: %s (%s)\n", t.Name, t.Image)
	}
	return nil
}

// close releases what newServer opened, for a start-up that goes no further.
func (s *server) close() {
	s.listener.Close()
	s.rts.Close()
	s.store.Close()
}

func (s *server) authenticator() (httpapi.Authenticator, string) {
	if len(s.cfg.Auth.Tokens) == 0 {
		return httpapi.SingleUser("local"), "no auth.tokens configured: every request is served as the single local admin user \"local\""
	}
	users := make([]httpapi.TokenUser, 0, len(s.cfg.Auth.Tokens))
	for _, t := range s.cfg.Auth.Tokens {
		users = append(users, httpapi.TokenUser{Token: t.Token.Reveal(), User: t.User, Admin: t.Admin, Team: t.Team, OnBehalfOf: t.OnBehalfOf})
	}
	return httpapi.TokenAuth(users), fmt.Sprintf("bearer tokens: %d configured user token(s)", len(users))
}

func (s *server) printStartup(mode string) {
	cfgFile := s.configPath
	if cfgFile == "" {
		cfgFile = "(none: defaults and BERTH_* environment)"
	}
	fmt.Fprintf(s.out, "berth serve: API on http://%s\n", s.listener.Addr())
	fmt.Fprintf(s.out, "  console:  http://%s%s\n", s.listener.Addr(), console.Path)
	scrapers := "admins"
	if s.cfg.Server.MetricsToken != "" {
		scrapers += " and server.metrics_token"
	}
	fmt.Fprintf(s.out, "  metrics:  http://%s%s (Prometheus; %s)\n", s.listener.Addr(), httpapi.MetricsPath, scrapers)
	fmt.Fprintf(s.out, "  config:   %s\n", cfgFile)
	fmt.Fprintf(s.out, "  store:    %s\n", s.cfg.Store.BoltPath)
	for _, h := range s.cfg.Docker.Hosts {
		fmt.Fprintf(s.out, "  docker:   %s at %s (capacity %d)\n", h.Name, h.Endpoint, h.Capacity)
	}
	for _, c := range s.cfg.Kubernetes.Clusters {
		fmt.Fprintf(s.out, "  kubernetes: %s, namespace %s (capacity %d)\n", c.Name, c.Namespace, c.Capacity)
	}
	if err := s.manager.Runnable(); err != nil {
		fmt.Fprintf(s.out, "  runtime:  none: creates are refused until docker.hosts or kubernetes.clusters lists one\n")
	}
	fmt.Fprintf(s.out, "  identity: %s\n", mode)
	fmt.Fprintf(s.out, "  creates:  at most %d at once, %d waiting\n", s.cfg.Container.CreateQueueMaxConcurrency, s.cfg.Container.CreateQueueMaxPending)
}

// run starts every background service, serves until ctx ends, then shuts
// down in order. Work not done is still in the outbox and resumes at the
// next start.
func (s *server) run(ctx context.Context) error {
	// Deferred first, so closed last: after every service has stopped.
	defer s.store.Close()
	defer s.rts.Close()

	if err := s.recoverGroups(ctx); err != nil {
		return err
	}
	if err := s.recoverQueues(ctx); err != nil {
		return err
	}
	services, err := s.services()
	if err != nil {
		return err
	}
	if err := services.Run(ctx); err != nil {
		return err
	}
	s.log.Info("stopped")
	return nil
}

// services are berth serve's background services in their stages. They
// start in this order and stop in the reverse one, each stage finished
// before the one above it is asked to stop:
//
//  1. loops: the outbox watcher, the lifetime timers, a state loop per
//     runtime, the purge, the reconciler and the image check. They stop last, so that what the
//     workers finish is still dispatched and observed.
//  2. workers: the queues' consumers. Stopped, they take no new message
//     and finish those in hand (bounded by the create start timeout).
//  3. intake: the HTTP API. It stops first: no new requests, those in
//     flight answered (up to httpShutdownTimeout).
//
// The store and the runtimes are closed by run once all have stopped.
func (s *server) services() (*startstop.Group, error) {
	ro := wiring.ReconcileOptions(s.cfg, s.manager, s.store, s.rts.All(), s.dispatcher, s.log, s.metrics)
	ro.Store = handedStore{Store: s.store, handover: s.handover}
	rec, err := reconcile.New(ro)
	if err != nil {
		return nil, fmt.Errorf("reconciler: %w", err)
	}
	loops := []startstop.Service{s.watcher.Service(), s.expiry.Service()}
	for _, rt := range s.rts.All() {
		// A start the state loop cannot take (a failed instance's) is
		// converged at once by the reconciler's own rule.
		loops = append(loops, startstop.New("state "+rt.Kind(), startstop.Until(func(ctx context.Context) {
			monitor.Run(ctx, rt, countedLoop{loop: monitor.Converging(s.manager, rec), metrics: s.metrics, kind: rt.Kind()}, s.log)
		})))
	}
	loops = append(loops, startstop.New("purge", startstop.Every(time.Hour, s.purge)), rec.Service(s.cfg.Container.ReconcileEvery))
	if s.cfg.Container.RefreshImageStatusOnStart && s.rts.Docker != nil {
		loops = append(loops, startstop.New("images", startstop.Once(s.checkImages)))
	}
	consumer := func(name outbox.QueueName, n int) startstop.Service {
		return startstop.New("consumer "+string(name), startstop.Blocking(func(ctx context.Context) error {
			return s.worker.Consume(ctx, s.queues[name], n)
		}))
	}
	return startstop.NewGroup("berth serve", s.log).
		Stage("loops", loops...).
		Stage("workers",
			// The create consumer takes as many as the semaphore allows, so
			// a message never waits for a slot while invisible to others.
			consumer(outbox.CreateQueue, s.cfg.Container.CreateQueueMaxConcurrency),
			consumer(outbox.LifecycleQueue, 8),
			// Webhook deliveries: each waits for its receiver at most
			// webhook.DefaultTimeout, so slow receivers take these
			// consumers only.
			consumer(outbox.NotifyQueue, notifyConsumers)).
		Stage("intake", startstop.New("http server", startstop.Blocking(s.serveHTTP))), nil
}

// httpShutdownTimeout bounds how long the requests in flight at shutdown
// are waited for.
const httpShutdownTimeout = 30 * time.Second

// serveHTTP serves the API until ctx ends, then stops taking requests and
// lets those in flight finish.
func (s *server) serveHTTP(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(s.listener) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new requests; finishing work in hand")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	_ = s.http.Shutdown(shutdownCtx)
	return nil
}

// recoverQueues re-sends, at start, what the in-process queues held when the
// last process ended: their messages died with it, while the outbox items
// they carried are still unfinished in the store.
func (s *server) recoverQueues(ctx context.Context) error {
	n, err := s.store.RequeueDispatched(ctx)
	if err != nil {
		return fmt.Errorf("recovering unfinished work: %w", err)
	}
	if n > 0 {
		s.log.Info("resuming unfinished operations from the last run", "items", n)
	}
	s.watcher.Notify()
	return nil
}

// recoverGroups applies container.recover_running_dag_on_start: when true
// the groups that were unfinished are resumed like everything else (their
// queued work is sent again, their running members watched); when false
// their members that were mid-operation are failed, with
// dag_node_cleanup_on_failed, before anything is dispatched again.
func (s *server) recoverGroups(ctx context.Context) error {
	if s.cfg.Container.RecoverRunningDAGOnStart {
		return nil
	}
	n, err := s.manager.InterruptGroups(ctx)
	if err != nil {
		return fmt.Errorf("failing interrupted group members: %w", err)
	}
	if n > 0 {
		s.log.Warn("group members interrupted by the restart were failed (recover_running_dag_on_start is false)", "members", n)
	}
	return nil
}

// purge deletes expired data (a pass of the hourly purge service).
func (s *server) purge(ctx context.Context) {
	if _, err := s.store.Purge(ctx, time.Now()); err != nil && ctx.Err() == nil {
		s.log.Warn("purging expired data", "error", err)
	}
}

// checkImages refreshes every template's stored image status
// (refresh_image_status_on_start), logs what will fail, and keeps the
// result for /healthz.
func (s *server) checkImages(ctx context.Context) {
	statuses, err := imagestatus.Refresh(ctx, s.store, s.rts.Docker, time.Now())
	if err != nil {
		s.log.Warn("image check", "error", err)
	}
	for _, st := range statuses {
		level := slog.LevelInfo
		if st.WillFail() {
			level = slog.LevelWarn
		}
		s.log.Log(ctx, level, "image check", "image_status", st)
	}
	s.mu.Lock()
	s.images = statuses
	s.mu.Unlock()
}

// healthPings bounds the Docker hosts health pings at once: all of a large
// fleet's within health's timeout, without a connection per host at once.
const healthPings = 64

// pingHosts pings every Docker host, healthPings at a time (one after
// another, a fleet of 1,000 hosts took seconds and reported the hosts not
// reached within the timeout as down), and says whether any did not answer.
func (s *server) pingHosts(ctx context.Context) (map[string]any, bool) {
	if s.rts.Docker == nil {
		return map[string]any{}, false
	}
	names := s.rts.Docker.Hosts()
	errs := make([]error, len(names))
	sem := make(chan struct{}, healthPings)
	var wg sync.WaitGroup
	for i, h := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if cli := s.rts.Docker.Client(h); cli == nil {
				errs[i] = fmt.Errorf("no client for host %q", h)
			} else {
				_, errs[i] = cli.Ping(ctx, client.PingOptions{})
			}
		})
	}
	wg.Wait()
	hosts, down := make(map[string]any, len(names)), false
	for i, h := range names {
		entry := map[string]any{"ok": errs[i] == nil}
		if errs[i] != nil {
			down = true
			entry["error"] = errs[i].Error()
		}
		hosts[h] = entry
	}
	return hosts, down
}

// health reports the store, the queues, each Docker host and the
// Kubernetes clusters. berth is ready while the store answers (the
// in-process queues always take messages); a Docker host or cluster that
// does not answer only degrades it: the API still serves, and work for
// that node waits for it.
func (s *server) health(ctx context.Context) (bool, any) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ready, degraded := true, false
	report := map[string]any{}
	if n, err := s.store.AdmissionCount(ctx); err != nil {
		ready = false
		report["store"] = map[string]any{"ok": false, "error": err.Error()}
	} else {
		report["store"] = map[string]any{"ok": true, "path": s.cfg.Store.BoltPath, "unfinished_creates": n}
	}
	qs := map[string]any{}
	for name, q := range s.queues {
		st := q.Stats()
		qs[string(name)] = map[string]any{"ok": true, "visible": st.Visible, "in_flight": st.InFlight, "delayed": st.Delayed,
			"dead_letters": q.DeadLetter().Stats().Total()}
	}
	qs["create_slots_in_use"] = s.slots.InUse()
	report["queues"] = qs
	hosts, down := s.pingHosts(ctx)
	degraded = degraded || down
	report["docker"] = hosts
	if s.rts.Kubernetes != nil {
		entry := map[string]any{"ok": true}
		if err := s.rts.Kubernetes.Ping(ctx); err != nil {
			degraded = true
			entry = map[string]any{"ok": false, "error": err.Error()}
		}
		report["kubernetes"] = entry
	}
	s.mu.Lock()
	if s.images != nil {
		report["images"] = s.images
	}
	s.mu.Unlock()
	report["ok"] = ready
	switch {
	case !ready:
		report["status"] = "not ready"
	case degraded:
		report["status"] = "degraded"
	default:
		report["status"] = "ready"
	}
	return ready, report
}
