// Package manager is berth's ContainerManager: it validates user requests,
// writes each one as a single store call (instance change + outbox item +
// event), and applies what the runtimes report (OnEvent) through the FSM.
// It is the one writer of instances: HTTP handlers call its requests, and
// the workers and the reconciler say what they mean as intents (ClaimItem,
// Fail, Requeue, ApplyCleanup, …: intents.go) which it turns into store
// writes, so every write retries lost races by one rule
// (MaxConflictRetries), applies the group policy one way and wakes this
// process's waiters at once. They read from the store directly.
//
// Its exported surface is those verbs and intents only: the write
// primitives the intents are built on (advance, remove: write.go) stay
// inside, and tests of the package reach them through export_test.go.
package manager

import (
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/store"
)

// Options configure a Manager.
type Options struct {
	Store store.Store
	// MaxPending is container.create_queue_max_pending: unfinished creates
	// beyond it are refused with ErrQueueFull.
	MaxPending int
	// Quotas are every owner's and team's limits without an override
	// (config quotas.default); zero: no limit.
	Quotas container.QuotaUse
	// MaxPendingPerOwner is container.create_queue_max_pending_per_owner:
	// one owner's unfinished creates beyond it are refused with
	// ErrQueueFull while others' are still taken. Zero or not below
	// MaxPending: no share of its own.
	MaxPendingPerOwner int
	// Runtimes are the runtime kinds templates may name (config
	// container.allowed_runtimes).
	Runtimes []string
	// BindRoots are the host paths bind mounts may come from (the union of
	// every node's roots, config.Config.HostPathRoots: Docker hosts' and
	// clusters'; placement checks each node's own again).
	BindRoots []string
	// Nodes are the deployment's Docker hosts and Kubernetes clusters, and
	// NodesKnown says whether this process knows them. When it does, a
	// template must name a runtime with a node (and literal host_labels a
	// node of it has), and with no node at all every create is refused
	// with ErrNoRuntime. When it does not (the api function on AWS, whose
	// node list sits in the runtime secret only the workers read), every
	// allowed runtime is accepted and a create for one with no node fails
	// at the worker at once.
	Nodes      []Node
	NodesKnown bool
	// WorkspaceRoot is where $WORKSPACE_PATH points: WorkspaceRoot/<user>.
	// Defaults to config.DefaultWorkspaceRoot.
	WorkspaceRoot string
	// Clock and Logger default to time.Now and slog.Default.
	Clock  func() time.Time
	Logger *slog.Logger
	// WaitPoll is the first poll interval of Wait (it backs off to 1 s).
	// Defaults to DefaultWaitPoll.
	WaitPoll time.Duration
	// Metrics receives EMF metrics; nil discards them.
	Metrics *metrics.Emitter
	// Groups are the cleanup policies applied to group members; the zero
	// value applies none.
	Groups GroupPolicies
	// OnCommit, if set, is called after every instance write made through
	// the manager commits (the local server wakes its outbox watcher with
	// it). It must not block.
	OnCommit func(store.Commit)
	// Webhooks is the address policy of webhook receivers
	// (webhooks.allowed_networks); the zero value allows public ones only.
	Webhooks webhook.Guard
	// EventBus, when set, makes every status change also a delivery to the
	// deployment's event bus (container.EventBusTarget), written in the
	// change's transaction like a subscription's (webhooks.event_bus).
	EventBus bool
	// Lifetimes are the deployment's lifetime for instances of templates
	// that set none; the zero value gives them none.
	Lifetimes LifetimeDefaults
}

// DefaultWaitPoll is Options.WaitPoll's default.
const DefaultWaitPoll = 100 * time.Millisecond

// Manager is the ContainerManager. It is safe for concurrent use.
type Manager struct {
	store         store.Store
	maxPending    int
	quotas        container.QuotaUse
	maxPerOwner   int
	runtimes      []string
	bindRoots     []string
	workspaceRoot string
	now           func() time.Time
	log           *slog.Logger
	waitPoll      time.Duration
	metrics       *metrics.Emitter
	changes       *changes
	groups        GroupPolicies
	nodes         []Node
	nodesKnown    bool
	// templates spares creates the read of their template (templatecache.go).
	templates templateCache
	// ledger caches the bind ledger (bindledger.go).
	ledger ledgerCache
	// webhooks is Options.Webhooks.
	webhooks webhook.Guard
	// hooks caches the webhook subscriptions (notify.go).
	hooks webhookCache
	// eventBus is Options.EventBus.
	eventBus bool
	// lifetimes is Options.Lifetimes.
	lifetimes LifetimeDefaults
}

// New returns a Manager.
func New(o Options) *Manager {
	ch := newChanges()
	onCommit := o.OnCommit
	hooked := store.Hooked{Store: o.Store, OnCommit: func(c store.Commit) {
		ch.fire()
		if onCommit != nil {
			onCommit(c)
		}
	}}
	m := &Manager{
		changes: ch, maxPending: o.MaxPending, quotas: o.Quotas, maxPerOwner: o.MaxPendingPerOwner, runtimes: o.Runtimes, bindRoots: o.BindRoots,
		workspaceRoot: o.WorkspaceRoot, now: o.Clock, log: o.Logger, waitPoll: o.WaitPoll, metrics: o.Metrics,
		groups: o.Groups, nodes: o.Nodes, nodesKnown: o.NodesKnown, webhooks: o.Webhooks, eventBus: o.EventBus,
		lifetimes: o.Lifetimes,
	}
	if m.now == nil {
		m.now = time.Now
	}
	// Every status change written through the manager reports itself to
	// the subscriptions it matches (notify.go), and a terminal one clears
	// the instance's endpoints (endpoints.go).
	m.store = notifying{Store: endpointsRule{hooked}, m: m}
	if m.log == nil {
		m.log = slog.Default()
	}
	if len(m.runtimes) == 0 {
		m.runtimes = []string{container.RuntimeDocker}
	}
	if m.workspaceRoot == "" {
		m.workspaceRoot = config.DefaultWorkspaceRoot
	}
	if m.waitPoll <= 0 {
		m.waitPoll = DefaultWaitPoll
	}
	return m
}

// workspacePath is WorkspaceRoot/<user>, the user id made one path
// element: kept as it is when it is letters, digits, '.', '_' and '-' only
// (and not "." or ".."), else every other byte percent-encoded. The
// encoding is one-to-one, so two users never share a workspace ("a@b" and
// "a_b" are a%40b and a_b), and no id can climb out of the root.
func (m *Manager) workspacePath(user string) string {
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		if c < 0x80 && safePathByte[c] && !(c == '.' && (user == "." || user == "..")) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return path.Join(m.workspaceRoot, b.String())
}

// safePathByte marks the ASCII bytes kept as they are in a workspace name.
var safePathByte = func() (t [0x80]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	return t
}()
