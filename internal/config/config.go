package config

import (
	"path/filepath"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// Config is the whole of config.yml. Each field is one top-level section.
type Config struct {
	Container  Container  `yaml:"container"`
	Server     Server     `yaml:"server"`
	Store      Store      `yaml:"store"`
	Auth       Auth       `yaml:"auth"`
	Docker     Docker     `yaml:"docker"`
	Kubernetes Kubernetes `yaml:"kubernetes"`
	Queue      Queue      `yaml:"queue"`
	Secrets    Secrets    `yaml:"secrets"`
	Webhooks   Webhooks   `yaml:"webhooks"`
	Quotas     Quotas     `yaml:"quotas"`
	Fleet      Fleet      `yaml:"fleet"`
}

// Quotas is the `quotas:` section: what every owner and every team may
// hold when no override (PUT /api/quotas/users/{user}, …/teams/{team})
// says otherwise.
type Quotas struct {
	// Default is every owner's and every team's limits: instances, running,
	// pending, cpus (cores), memory ("8Gi"); 0 or absent is no limit.
	Default container.QuotaLimits `yaml:"default"`
}

// Limits returns Default as amounts (Load has checked it; a value it
// would refuse is no limit).
func (q Quotas) Limits() container.QuotaUse {
	u, _ := q.Default.Parse()
	return u
}

// Container is the `container:` section. The first eight keys keep the
// names and defaults of the container-worker-queue design berth implements,
// so a gobrave config.yml section carries over unchanged; the rest are berth's.
type Container struct {
	// RefreshImageStatusOnStart stores each template's image status per host
	// (shown on GET /api/templates/{name}) at start-up, and on AWS at the
	// reconciler's first pass after a cold start.
	RefreshImageStatusOnStart bool `yaml:"refresh_image_status_on_start"`
	// RecoverRunningDAGOnStart resumes unfinished groups at start-up; when
	// false their members that were mid-operation are failed instead (with
	// DAGNodeCleanupOnFailed). On AWS the start-up is a new deployment
	// generation taking over (the reconciler's first pass of it).
	RecoverRunningDAGOnStart bool `yaml:"recover_running_dag_on_start"`
	// CleanupDAGNodeContainersBeforeStart deletes a new group member's stale
	// members (same owner, group and name, created before it) before its
	// container is made, and lets a group reset delete every member; when
	// false neither happens (a reset is refused, 409).
	CleanupDAGNodeContainersBeforeStart bool `yaml:"cleanup_dag_node_containers_before_start"`
	// DeleteContainerOnNodeSuccess deletes a group member that exits 0.
	DeleteContainerOnNodeSuccess bool `yaml:"delete_container_on_node_success"`
	// DAGNodeCleanupOnFailed is applied to a group member that fails.
	DAGNodeCleanupOnFailed CleanupPolicy `yaml:"dag_node_cleanup_on_failed"`
	// DAGNodeCleanupOnDAGFinished is applied to every member when a group finishes.
	DAGNodeCleanupOnDAGFinished CleanupPolicy `yaml:"dag_node_cleanup_on_dag_finished"`
	// CreateQueueMaxConcurrency bounds simultaneous creations: the local
	// semaphore and, on AWS, the CreateWorker's reserved concurrency.
	CreateQueueMaxConcurrency int `yaml:"create_queue_max_concurrency"`
	// CreateQueueMaxPending bounds queued creations; beyond it a create is 429.
	CreateQueueMaxPending int `yaml:"create_queue_max_pending"`
	// CreateQueueMaxPendingPerOwner bounds one owner's share of
	// CreateQueueMaxPending, so that another owner's create is still
	// accepted while one floods; beyond it that owner's create is 429.
	// 0 (the default) or a value not below CreateQueueMaxPending means
	// the total: no share of its own.
	CreateQueueMaxPendingPerOwner int `yaml:"create_queue_max_pending_per_owner"`

	// CreateStartTimeout is how long a creation slot is held waiting for the
	// container to become stable. Defaults to 5 minutes, the fixed value of
	// the container-worker-queue design.
	CreateStartTimeout time.Duration `yaml:"create_start_timeout"`
	// MaxAttempts is how often an operation is tried before the instance
	// goes to failed (SQS maxReceiveCount on AWS).
	MaxAttempts int `yaml:"max_attempts"`
	// UnavailableRetryFor is how long an operation keeps waiting for a
	// runtime that cannot be reached (engine down, connection refused,
	// timeouts, 503) before the instance goes to failed. Such waits spend
	// no attempt of MaxAttempts. Defaults to DefaultUnavailableRetryFor.
	UnavailableRetryFor time.Duration `yaml:"unavailable_retry_for"`
	// StopGracePeriod is the time between SIGTERM and SIGKILL on stop.
	StopGracePeriod time.Duration `yaml:"stop_grace_period"`
	// WorkspaceRoot is where $WORKSPACE_PATH directories are made.
	WorkspaceRoot string `yaml:"workspace_root"`
	// OutboxSweepAfter is the age at which a still-pending outbox item is
	// dispatched again by the sweeper.
	OutboxSweepAfter time.Duration `yaml:"outbox_sweep_after"`
	// ReconcileEvery is the local server's reconciler period (in AWS, the
	// EventBridge schedule).
	ReconcileEvery time.Duration `yaml:"reconcile_every"`
	// OrphanGrace is how old a berth container without an instance must be
	// before the reconciler removes it (so a create racing its instance
	// write is never hit). Defaults to DefaultOrphanGrace.
	OrphanGrace time.Duration `yaml:"orphan_grace"`
	// AllowedRuntimes are the runtimes templates may name.
	AllowedRuntimes []string `yaml:"allowed_runtimes"`
	// DefaultLifetime is how long an instance of a template that sets no
	// lifetime lives before berth stops it (a create may ask for another,
	// up to MaxLifetime). Defaults to 0: such instances live until someone
	// stops them.
	DefaultLifetime time.Duration `yaml:"default_lifetime"`
	// MaxLifetime caps the lifetime of an instance of a template that sets
	// none, counted from its create, extensions included. Defaults to 0:
	// no cap.
	MaxLifetime time.Duration `yaml:"max_lifetime"`
	// StoppedRetention is how long an instance of a template that sets no
	// retention stays stopped before berth deletes it. Defaults to 0:
	// until someone deletes it.
	StoppedRetention time.Duration `yaml:"stopped_retention"`
	// FailedRetention is the same for a failed instance. Defaults to 0.
	FailedRetention time.Duration `yaml:"failed_retention"`
}

// CleanupPolicy is what happens to a group member's container: nothing,
// stop it, or delete it.
type CleanupPolicy string

// The cleanup policies: what happens to runtime objects when an instance
// is deleted or fails.
const (
	CleanupNone   CleanupPolicy = "none"
	CleanupStop   CleanupPolicy = "stop"
	CleanupDelete CleanupPolicy = "delete"
)

// Server is the `server:` section: the local HTTP server of `berth serve`
// (Lambda ignores addr and data_dir).
type Server struct {
	// Addr is the listen address. Loopback by default: exposing the API
	// is a decision, not an accident.
	Addr string `yaml:"addr"`
	// DataDir holds local state (the bolt file by default).
	DataDir string `yaml:"data_dir"`
	// RequestBodyLimit is the largest request body in bytes (413 beyond).
	// Defaults to DefaultRequestBodyLimit.
	RequestBodyLimit int64 `yaml:"request_body_limit"`
	// WaitMax caps the timeout of GET /api/containers/{id}/wait. Defaults
	// to DefaultWaitMax.
	WaitMax time.Duration `yaml:"wait_max"`
	// Metrics is where `berth serve` writes its CloudWatch Embedded Metric
	// Format lines: MetricsNone or MetricsStdout. The Lambda functions
	// always write them to stdout, where CloudWatch Logs extracts them.
	// Defaults to DefaultServerMetrics.
	Metrics string `yaml:"metrics"`
	// MetricsToken, if set, is a bearer token that may read `berth
	// serve`'s GET /metrics without being a user: a Prometheus scraper's
	// (admins may read it with their own token). A secret: it never
	// prints. Empty (the default): admins only.
	MetricsToken Secret `yaml:"metrics_token"`
	// MaxWaiters caps the GET /wait calls served at once (429 beyond).
	// Defaults to DefaultMaxWaiters.
	MaxWaiters int `yaml:"max_waiters"`
	// MaxWaitersPerCaller caps the GET /wait calls one caller (user) has
	// served at once (429 beyond), so that one caller's waits cannot make
	// everyone else's 429. Defaults to DefaultMaxWaitersPerCaller.
	MaxWaitersPerCaller int `yaml:"max_waiters_per_caller"`
	// MaxFollows caps the GET /api/containers/{id}/logs?follow=true
	// streams served at once (429 beyond): each holds a connection, a
	// goroutine and a log stream of the runtime's (a descriptor here and
	// one in dockerd) for as long as the container runs. Defaults to
	// DefaultMaxFollows.
	MaxFollows int `yaml:"max_follows"`
	// MaxFollowsPerCaller caps the follows one caller (user) has served
	// at once (429 beyond), so that one caller's follows cannot make
	// everyone else's 429. Defaults to DefaultMaxFollowsPerCaller.
	MaxFollowsPerCaller int `yaml:"max_follows_per_caller"`
	// ExecMaxTimeout is the longest timeout a POST
	// /api/containers/{id}/exec may ask for (422 beyond); a request that
	// gives none gets the shorter of it and 10 s. The exec function on
	// AWS holds it to 25 s whatever it says (API Gateway ends a request
	// at 30 s). Defaults to DefaultExecMaxTimeout.
	ExecMaxTimeout time.Duration `yaml:"exec_max_timeout"`
	// MaxExecsPerOwner caps the execs one caller (user) has in progress
	// at once across the deployment (429 beyond, counted in the store).
	// Defaults to DefaultMaxExecsPerOwner.
	MaxExecsPerOwner int `yaml:"max_execs_per_owner"`
	// MaxExecsPerContainer caps the execs in progress in one container
	// (429 beyond). Defaults to DefaultMaxExecsPerContainer.
	MaxExecsPerContainer int `yaml:"max_execs_per_container"`
	// ExecOutputLimit is the most of each stream (stdout, stderr) an
	// exec's answer carries, in bytes: the rest is read and dropped, and
	// the answer says truncated. Memory per exec is bounded by twice it.
	// Defaults to DefaultExecOutputLimit.
	ExecOutputLimit int `yaml:"exec_output_limit"`
	// ReadHeaderTimeout is how long a client has to send a request's
	// headers. Defaults to DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout is how long a client has to send a whole request, body
	// included: a connection that declares a body and sends none is
	// closed after it. Defaults to DefaultReadTimeout.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds a response from the end of its request's headers;
	// it must exceed wait_max, or every long GET /wait would be cut off.
	// Defaults to DefaultWriteTimeout.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout closes a kept-alive connection with no request.
	// Defaults to DefaultIdleTimeout.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes caps a request's headers (431 beyond). Defaults to
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
}

// Where `berth serve` writes metrics (server.metrics).
const (
	MetricsNone   = "none"
	MetricsStdout = "stdout"
)

// DefaultServerMetrics is server.metrics' default: a local server's
// metrics would only clutter its terminal.
const DefaultServerMetrics = MetricsNone

// Defaults of the `server:` keys that guard `berth serve` against slow or
// greedy clients.
const (
	DefaultMaxWaiters        = 256
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 32 << 10
	// DefaultRequestBodyLimit is server.request_body_limit's default, and
	// the API handler's when it is given none (httpapi.Options.BodyLimit).
	DefaultRequestBodyLimit = 64 << 10
	// DefaultWaitMax is server.wait_max's default: the longest GET
	// /api/containers/{id}/wait, under API Gateway's 30 s. The API handler
	// (httpapi.Options.WaitMax) and the client (client.WithWaitMax) fall
	// back on it.
	DefaultWaitMax = 25 * time.Second
)

// Defaults of the server.exec_* keys and server.max_execs_*: an exec's
// timeout fits API Gateway's 30 s with room for the kill and the answer;
// a handful of commands at once per caller and two per container serve a
// probe or a debugging session without letting one caller tie up a
// runtime's exec streams; 256 KiB per stream is a long listing and well
// under Lambda's 6 MB answer.
const (
	DefaultExecMaxTimeout       = 25 * time.Second
	DefaultMaxExecsPerOwner     = 4
	DefaultMaxExecsPerContainer = 2
	DefaultExecOutputLimit      = 256 << 10
)

// DefaultMaxWaitersPerCaller is server.max_waiters_per_caller's default, an
// eighth of DefaultMaxWaiters: a script waiting on many containers at once,
// but never the whole server.
const DefaultMaxWaitersPerCaller = 32

// Defaults of server.max_follows and server.max_follows_per_caller: a
// follow lasts as long as its container, so far fewer are needed at once
// than waits; one caller watching a few containers at a time.
const (
	DefaultMaxFollows          = 256
	DefaultMaxFollowsPerCaller = 16
)

// StoreBackend names a store implementation.
type StoreBackend string

// The store backends.
const (
	StoreBolt     StoreBackend = "bolt"
	StoreDynamoDB StoreBackend = "dynamodb"
)

// Store is the `store:` section.
type Store struct {
	Backend StoreBackend `yaml:"backend"`
	// BoltPath is the bolt file; empty means <server.data_dir>/berth.db,
	// resolved by Load after the environment is applied.
	BoltPath string `yaml:"bolt_path"`
	// TablePrefix is prepended to the DynamoDB table names.
	TablePrefix string `yaml:"table_prefix"`
	// Region is the AWS region; empty means the SDK's default chain.
	Region string `yaml:"region"`
}

// Kubernetes is the `kubernetes:` section. The types are plain on purpose:
// nothing from client-go is linked into binaries that only read config.
type Kubernetes struct {
	Clusters []KubernetesCluster `yaml:"clusters"`
}

// KubernetesCluster is one cluster berth may place containers on. It is
// reached through a kubeconfig (Kubeconfig, Context), through EKS
// (EKSCluster, Region: endpoint and CA from eks:DescribeCluster, a token
// from the AWS credentials), or, with neither, through the in-cluster
// service account.
type KubernetesCluster struct {
	// Name identifies the cluster; it becomes runtime_node_name's prefix
	// ("<name>/<kubernetes node>" once the pod is scheduled), so it must
	// not contain '/'.
	Name string `yaml:"name"`
	// Kubeconfig is a kubeconfig file; empty (and no EKSCluster) means
	// in-cluster config.
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	// Context selects a kubeconfig context; empty means its current one.
	Context string `yaml:"context,omitempty"`
	// EKSCluster is the EKS cluster's name, for clusters reached through
	// EKS instead of a kubeconfig.
	EKSCluster string `yaml:"eks_cluster,omitempty"`
	// Region is the EKS cluster's AWS region; empty means the SDK's
	// default chain.
	Region string `yaml:"region,omitempty"`
	// AllowedHostPathRoots are the only node paths a template's bind
	// volumes may mount (as hostPath volumes); empty refuses them.
	AllowedHostPathRoots []string `yaml:"allowed_host_path_roots,omitempty"`
	// Namespace is where berth's pods go ("berth" when empty).
	Namespace string `yaml:"namespace,omitempty"`
	// Labels are matched by a template's scheduling.host_labels.
	Labels map[string]string `yaml:"labels,omitempty"`
	// Capacity is how many berth containers may run there (0: no limit).
	Capacity int `yaml:"capacity"`
}

// DefaultNamespace is a cluster's namespace when none is configured.
const DefaultNamespace = "berth"

// QueueBackend names a queue implementation.
type QueueBackend string

// The queue backends.
const (
	QueueMemory QueueBackend = "memory"
	QueueSQS    QueueBackend = "sqs"
)

// Queue is the `queue:` section. Creates and lifecycle operations have
// separate queues so that a burst of creates never delays a stop.
type Queue struct {
	Backend           QueueBackend `yaml:"backend"`
	CreateQueueURL    string       `yaml:"create_queue_url"`
	LifecycleQueueURL string       `yaml:"lifecycle_queue_url"`
	// NotifyQueueURL is the SQS queue of webhook and event-bus deliveries
	// (optional): with it, a slow receiver never holds the lifecycle
	// queue's consumers; without it, deliveries ride the lifecycle queue.
	NotifyQueueURL    string        `yaml:"notify_queue_url"`
	VisibilityTimeout time.Duration `yaml:"visibility_timeout"`
}

// SecretSource names where secret values come from.
type SecretSource string

// The secret sources: none, a local file or the environment (berth serve),
// SSM Parameter Store (AWS).
const (
	SecretsNone SecretSource = "none"
	SecretsFile SecretSource = "file"
	SecretsEnv  SecretSource = "env"
	SecretsSSM  SecretSource = "ssm"
)

// Defaults of the `secrets:` prefixes.
const (
	DefaultSecretEnvPrefix = "BERTH_SECRET_"
	DefaultSecretSSMPrefix = "/berth/"
)

// Secrets is the `secrets:` section: where the worker reads the values a
// template's secret_env names when it makes a container.
type Secrets struct {
	// Source is none, file, env or ssm. With none, a create from a
	// template with secret_env fails. Defaults to none.
	Source SecretSource `yaml:"source"`
	// File is source file's YAML map of secret name to value, mode 0600.
	File string `yaml:"file"`
	// EnvPrefix is source env's variable prefix: secret db-password is
	// <prefix>DB_PASSWORD. Defaults to DefaultSecretEnvPrefix.
	EnvPrefix string `yaml:"env_prefix"`
	// SSMPrefix is source ssm's parameter path: secret db-password is the
	// SecureString <prefix>db-password. Defaults to DefaultSecretSSMPrefix.
	SSMPrefix string `yaml:"ssm_prefix"`
}

// Defaults of the container section that other packages share (the
// worker, the manager and the reconciler fall back on them when not given
// a value).
const (
	// DefaultCreateStartTimeout is container.create_start_timeout's
	// default: how long a new container has to become stable.
	DefaultCreateStartTimeout = 5 * time.Minute
	// DefaultMaxAttempts is container.max_attempts's default.
	DefaultMaxAttempts = 5
	// DefaultStopGracePeriod is container.stop_grace_period's default.
	DefaultStopGracePeriod = 10 * time.Second
	// DefaultWorkspaceRoot is container.workspace_root's default.
	DefaultWorkspaceRoot = "/srv/berth/workspaces"
	// DefaultOrphanGrace is container.orphan_grace's default, and the
	// reconciler's when it is given none (reconcile.DefaultOrphanGrace):
	// far longer than any create takes to write its instance.
	DefaultOrphanGrace = 5 * time.Minute
)

// DefaultUnavailableRetryFor is container.unavailable_retry_for's default:
// an engine outage of a working day is waited out; a host gone for good is
// a failure the user sees the next day.
const DefaultUnavailableRetryFor = 24 * time.Hour

// MaxUnavailableRetryFor caps container.unavailable_retry_for: an operation
// must finish well within the life of its outbox item
// (store.OutboxMaxAge).
const MaxUnavailableRetryFor = 7 * 24 * time.Hour

// Default returns the configuration used when nothing is configured, with
// derived values (store.bolt_path) resolved. It is what Load returns for an
// empty path and an empty environment.
func Default() *Config {
	c := defaults()
	c.resolve()
	return c
}

// defaults returns the defaults before derived values are resolved, so that
// a file or variable setting server.data_dir still moves the bolt file.
func defaults() *Config {
	return &Config{
		Container: Container{
			RefreshImageStatusOnStart:           true,
			RecoverRunningDAGOnStart:            true,
			CleanupDAGNodeContainersBeforeStart: true,
			DeleteContainerOnNodeSuccess:        true,
			DAGNodeCleanupOnFailed:              CleanupStop,
			DAGNodeCleanupOnDAGFinished:         CleanupDelete,
			CreateQueueMaxConcurrency:           3,
			CreateQueueMaxPending:               50,
			CreateStartTimeout:                  DefaultCreateStartTimeout,
			MaxAttempts:                         DefaultMaxAttempts,
			UnavailableRetryFor:                 DefaultUnavailableRetryFor,
			StopGracePeriod:                     DefaultStopGracePeriod,
			WorkspaceRoot:                       DefaultWorkspaceRoot,
			OutboxSweepAfter:                    30 * time.Second,
			ReconcileEvery:                      30 * time.Second,
			OrphanGrace:                         DefaultOrphanGrace,
			AllowedRuntimes:                     []string{container.RuntimeDocker},
		},
		Server: Server{
			Addr:              "127.0.0.1:8080",
			DataDir:           "./.berth",
			RequestBodyLimit:  DefaultRequestBodyLimit,
			WaitMax:           DefaultWaitMax,
			Metrics:           DefaultServerMetrics,
			MaxWaiters:        DefaultMaxWaiters,
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			ReadTimeout:       DefaultReadTimeout,
			WriteTimeout:      DefaultWriteTimeout,
			IdleTimeout:       DefaultIdleTimeout,
			MaxHeaderBytes:    DefaultMaxHeaderBytes,
			// One caller's share of MaxWaiters.
			MaxWaitersPerCaller:  DefaultMaxWaitersPerCaller,
			MaxFollows:           DefaultMaxFollows,
			MaxFollowsPerCaller:  DefaultMaxFollowsPerCaller,
			ExecMaxTimeout:       DefaultExecMaxTimeout,
			MaxExecsPerOwner:     DefaultMaxExecsPerOwner,
			MaxExecsPerContainer: DefaultMaxExecsPerContainer,
			ExecOutputLimit:      DefaultExecOutputLimit,
		},
		Store: Store{
			Backend:     StoreBolt,
			TablePrefix: "berth-",
		},
		Auth: Auth{
			AdminClaim: DefaultAdminClaim,
			AdminGroup: DefaultAdminGroup,
		},
		Queue: Queue{
			Backend:           QueueMemory,
			VisibilityTimeout: 30 * time.Second,
		},
		Webhooks: Webhooks{AllowedNetworks: []string{}, RetryBackoff: DefaultWebhookRetryBackoff,
			RetryBackoffMax: DefaultWebhookRetryBackoffMax},
		Fleet: Fleet{Period: DefaultFleetPeriod},
		Secrets: Secrets{
			Source:    SecretsNone,
			EnvPrefix: DefaultSecretEnvPrefix,
			SSMPrefix: DefaultSecretSSMPrefix,
		},
	}
}

// resolve fills the values derived from others, once every source is in.
func (c *Config) resolve() {
	if c.Store.BoltPath == "" {
		c.Store.BoltPath = filepath.Join(c.Server.DataDir, "berth.db")
	}
	for i := range c.Kubernetes.Clusters {
		if c.Kubernetes.Clusters[i].Namespace == "" {
			c.Kubernetes.Clusters[i].Namespace = DefaultNamespace
		}
	}
}
