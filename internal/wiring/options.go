package wiring

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/notify/eventbus"
	"github.com/berth-io/berth/internal/notify/webhook"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/sqsqueue"
	"github.com/berth-io/berth/internal/reconcile"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/worker"
)

// Env is what every function builds once per Lambda container, before its
// first event: the configuration, the AWS clients, the DynamoDB store, the
// metrics emitter and the logger.
type Env struct {
	Configuration
	AWS      aws.Config
	DynamoDB *dynamodb.Client
	Store    *dynamostore.Store
	Metrics  *metrics.Emitter
	Logger   *slog.Logger
}

// Configuration is a function's configuration and where it came from.
type Configuration struct {
	Config *config.Config
	// Document says where the configuration document came from (the
	// parameter, the secret, the file; "" without one): with one, the
	// configuration's nodes are the deployment's.
	Document string
	// ConfigVersion is the pinned version of the configuration parameter
	// (ConfigParameterVar), 0 without one: with the code's identity, what
	// tells one deployment of the stack from the next.
	ConfigVersion int64
}

// New loads the configuration of function (LoadFunctionConfig; withSQS
// when the function cannot work without both queues), warns of unknown
// BERTH_* variables in environ, and builds the clients and the store.
func New(ctx context.Context, function string, withSQS bool, env func(string) (string, bool), environ []string, logger *slog.Logger) (*Env, error) {
	cfg, err := LoadConfig(function, env, withSQS)
	if err != nil {
		return nil, err
	}
	WarnUnknownEnv(logger, environ)
	awsCfg, err := AWSConfig(ctx, cfg.Store.Region)
	if err != nil {
		return nil, err
	}
	c, err := LoadFunctionConfig(ctx, function, withSQS, env, AWSReaders{SSM: ssm.NewFromConfig(awsCfg), Secrets: secretsmanager.NewFromConfig(awsCfg)}, logger)
	if err != nil {
		return nil, err
	}
	ddb := DynamoDB(awsCfg, env)
	name, _ := env("AWS_LAMBDA_FUNCTION_NAME")
	return &Env{
		Configuration: *c,
		AWS:           awsCfg,
		DynamoDB:      ddb,
		Store:         dynamostore.New(ddb, dynamostore.Options{TablePrefix: c.Config.Store.TablePrefix}),
		Metrics:       Metrics(os.Stdout, name),
		Logger:        logger,
	}, nil
}

// AWSReaders are the clients the configuration document is read with.
type AWSReaders struct {
	SSM     ParameterReader
	Secrets SecretReader
}

// LoadFunctionConfig is the configuration of function as the deployment
// gives it: the environment (LoadConfig) over the document of the
// deployment, which is the parameter named by ConfigParameterVar joined
// with the secret named by ConfigSecretVar (JoinSecret); or, without a
// parameter, the secret alone as the whole document; or the file named by
// ConfigFileVar, never beside the others. A key the document sets and the
// environment sets otherwise is an error.
func LoadFunctionConfig(ctx context.Context, function string, withSQS bool, env func(string) (string, bool), r AWSReaders, logger *slog.Logger) (*Configuration, error) {
	paramVar, _ := env(ConfigParameterVar)
	secret, _ := env(ConfigSecretVar)
	file, _ := env(ConfigFileVar)
	if paramVar == "" && secret == "" {
		cfg, err := LoadConfig(function, env, withSQS)
		if err != nil {
			return nil, err
		}
		return &Configuration{Config: cfg, Document: file}, nil
	}
	if file != "" {
		return nil, fmt.Errorf("config: %s and %s/%s are set: name one source for the document", ConfigFileVar, ConfigParameterVar, ConfigSecretVar)
	}
	out := &Configuration{}
	var data []byte
	switch {
	case paramVar != "":
		ref, err := ParseParameterRef(paramVar)
		if err != nil {
			return nil, err
		}
		if data, err = ReadParameter(ctx, r.SSM, ref); err != nil {
			return nil, err
		}
		if err := CheckParameter(ref.String(), data); err != nil {
			return nil, err
		}
		out.Document, out.ConfigVersion = "parameter "+ref.String(), ref.Version
		if secret != "" {
			sec, err := ReadSecret(ctx, r.Secrets, secret)
			if err != nil {
				return nil, err
			}
			if data, err = JoinSecret(ref.String(), data, secret, sec); err != nil {
				return nil, err
			}
			out.Document += " with secret " + secret
		} else if readsNoSecret(function) {
			if data, err = withheldTLS(data); err != nil {
				return nil, err
			}
		}
	default:
		var err error
		if data, err = ReadSecret(ctx, r.Secrets, secret); err != nil {
			return nil, err
		}
		out.Document = "secret " + secret
	}
	cfg, err := LoadConfigData(function, out.Document, data, env, withSQS)
	if err != nil {
		return nil, err
	}
	docCfg, err := LoadConfigData(function, out.Document, data, onlyInfra(env), withSQS)
	if err != nil {
		return nil, err
	}
	if err := conflicts(out.Document, docCfg, cfg, env); err != nil {
		return nil, err
	}
	out.Config = cfg
	logger.Info("configuration document read", "source", out.Document, "config_version", out.ConfigVersion)
	return out, nil
}

// SQS is the SQS client of the function's AWS configuration.
func (e *Env) SQS() *sqs.Client { return sqs.NewFromConfig(e.AWS) }

// HasQueues reports whether both queue URLs are configured.
func HasQueues(cfg *config.Config) bool {
	return cfg.Queue.CreateQueueURL != "" && cfg.Queue.LifecycleQueueURL != ""
}

// Metrics is a function's EMF emitter: on Lambda the lines go to stdout,
// which CloudWatch Logs turns into metrics, with the function's name as the
// Function dimension.
func Metrics(w io.Writer, function string) *metrics.Emitter {
	return metrics.New(w, map[string]string{"Function": function})
}

// Queues maps the outbox's queue names to the SQS queues the
// configuration names: the create and lifecycle queues, and the notify
// queue when there is one (without it the dispatcher sends deliveries to
// the lifecycle queue).
func Queues(cfg *config.Config, c sqsqueue.API) map[outbox.QueueName]queue.Queue {
	out := map[outbox.QueueName]queue.Queue{
		outbox.CreateQueue:    sqsqueue.New(c, cfg.Queue.CreateQueueURL),
		outbox.LifecycleQueue: sqsqueue.New(c, cfg.Queue.LifecycleQueueURL),
	}
	if cfg.Queue.NotifyQueueURL != "" {
		out[outbox.NotifyQueue] = sqsqueue.New(c, cfg.Queue.NotifyQueueURL)
	}
	return out
}

// QueuesByName are the SQS queues the configuration names (the notify
// queue too when there is one), by QueueName: how a consumer finds the
// queue an SQS record came from (its eventSourceARN) to set that record's
// retry delay on it.
func QueuesByName(cfg *config.Config, c sqsqueue.API) map[string]*sqsqueue.Queue {
	out := map[string]*sqsqueue.Queue{}
	for _, u := range []string{cfg.Queue.CreateQueueURL, cfg.Queue.LifecycleQueueURL, cfg.Queue.NotifyQueueURL} {
		if u != "" {
			out[QueueName(u)] = sqsqueue.New(c, u)
		}
	}
	return out
}

// QueueName is the last part of a queue's URL or ARN: how an SQS record's
// eventSourceARN is matched to a configured queue URL.
func QueueName(urlOrARN string) string {
	for _, sep := range []string{"/", ":"} {
		urlOrARN = strings.TrimRight(urlOrARN, sep)
		if i := strings.LastIndex(urlOrARN, sep); i >= 0 {
			urlOrARN = urlOrARN[i+len(sep):]
		}
	}
	return urlOrARN
}

// ManagerOptions are the manager's options from the configuration, the
// same for every function and `berth serve`: admission, runtimes and their
// nodes (known: the configuration is the whole of it), bind roots,
// workspace root.
func ManagerOptions(cfg *config.Config, st store.Store, logger *slog.Logger, emf *metrics.Emitter) manager.Options {
	return manager.Options{
		Store:      st,
		MaxPending: cfg.Container.CreateQueueMaxPending,
		Quotas:     cfg.Quotas.Limits(),
		// Every function that creates gets it with the rest: the manager
		// passes it to the store's admission rule.
		MaxPendingPerOwner: cfg.Container.CreateQueueMaxPendingPerOwner,
		Runtimes:           cfg.Container.AllowedRuntimes,
		BindRoots:          cfg.HostPathRoots(),
		WorkspaceRoot:      cfg.Container.WorkspaceRoot,
		Logger:             logger,
		Metrics:            emf,
		Groups:             manager.GroupPoliciesFrom(cfg.Container),
		Nodes:              Nodes(cfg),
		NodesKnown:         true,
		Webhooks:           WebhookGuard(cfg),
		EventBus:           cfg.Webhooks.EventBus != "",
		Lifetimes:          manager.LifetimeDefaultsFrom(cfg.Container),
	}
}

// EventBus is the worker's event-bus deliverer from webhooks.event_bus,
// with a client on awsCfg (whose retryer retries throttled requests); nil
// without a bus. The stack grants events:PutEvents on that bus to the
// function that delivers (the notify function) only.
func EventBus(cfg *config.Config, awsCfg aws.Config) worker.Deliverer {
	if cfg.Webhooks.EventBus == "" {
		return nil
	}
	return &eventbus.Deliverer{Publisher: &eventbus.Publisher{
		Client: eventbridge.NewFromConfig(awsCfg), Bus: cfg.Webhooks.EventBus,
	}}
}

// WebhookGuard is the address policy of webhook receivers from
// webhooks.allowed_networks. Load has checked every CIDR; were one wrong
// anyway, the guard allows no private network at all, which refuses more,
// never less.
func WebhookGuard(cfg *config.Config) webhook.Guard {
	g, err := webhook.NewGuard(cfg.Webhooks.AllowedNetworks)
	if err != nil {
		return webhook.Guard{}
	}
	return g
}

// Nodes are the configuration's Docker hosts and Kubernetes clusters, which
// the manager checks templates and creates against.
func Nodes(cfg *config.Config) []manager.Node {
	var out []manager.Node
	for _, h := range cfg.Docker.Hosts {
		out = append(out, manager.Node{Kind: container.RuntimeDocker, Name: h.Name, Labels: h.Labels})
	}
	for _, c := range cfg.Kubernetes.Clusters {
		out = append(out, manager.Node{Kind: container.RuntimeKubernetes, Name: c.Name, Labels: c.Labels})
	}
	return out
}

// WorkerOptions are the worker's options from the configuration. Without
// CreateSlots (a Lambda worker) the create limit is the CreateWorker's
// reserved concurrency; `berth serve` adds its semaphore.
func WorkerOptions(cfg *config.Config, m *manager.Manager, st store.Store, rts *runtime.Resolver, logger *slog.Logger,
	emf *metrics.Emitter) worker.Options {
	return worker.Options{
		Manager: m, Store: st, Runtimes: rts,
		CreateStartTimeout: cfg.Container.CreateStartTimeout, StopGrace: cfg.Container.StopGracePeriod,
		MaxAttempts: cfg.Container.MaxAttempts, UnavailableRetryFor: cfg.Container.UnavailableRetryFor,
		Metrics: emf, Logger: logger,
		Webhooks:        WebhookDeliverer(cfg, st, &webhook.StoreLimiter{Leases: st}),
		DeliveryBackoff: worker.ExponentialBackoff(cfg.Webhooks.RetryBackoff, cfg.Webhooks.RetryBackoffMax),
	}
}

// WebhookDeliverer is the webhook client of a worker: the subscriptions
// read from st, the configuration's guard, and limit bounding each
// subscription owner's deliveries in flight (a webhook.StoreLimiter shared
// by every invocation of the notify function; `berth serve`, one process,
// counts in memory with a webhook.LocalLimiter).
func WebhookDeliverer(cfg *config.Config, st store.Store, limit webhook.Limiter) *webhook.Deliverer {
	return &webhook.Deliverer{Subscriptions: st, Guard: WebhookGuard(cfg), Limiter: limit}
}

// ReconcileOptions are the reconciler's options from the configuration:
// every setting the local server and the Lambda function share (orphan
// grace, stuck timeouts, sweep age). sweeper may be nil.
func ReconcileOptions(cfg *config.Config, m *manager.Manager, st store.Store, rts []runtime.Runtime, sweeper reconcile.Sweeper,
	logger *slog.Logger, emf *metrics.Emitter) reconcile.Options {
	return reconcile.Options{
		Manager: m, Store: st, Runtimes: rts, Scope: cfg.Docker.Scope, Sweeper: sweeper,
		OrphanGrace:         cfg.Container.OrphanGrace,
		OutboxStaleAfter:    cfg.Container.OutboxSweepAfter,
		UnavailableRetryFor: cfg.Container.UnavailableRetryFor,
		StopGrace:           cfg.Container.StopGracePeriod,
		Timeouts:            reconcile.TimeoutsFor(cfg.Container),
		Logger:              logger, Metrics: emf,
	}
}

// RuntimesHint explains where a Lambda function's docker.hosts and
// kubernetes.clusters come from when building a runtime fails.
func RuntimesHint(err error) error {
	return fmt.Errorf("%w (docker.hosts and kubernetes.clusters come from the parameter named by %s with the secret named by %s, or the file named by %s)", err, ConfigParameterVar, ConfigSecretVar, ConfigFileVar)
}

// SecretReader is the part of the Secrets Manager client ReadSecret uses.
type SecretReader interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretReader = (*secretsmanager.Client)(nil)

// ReadSecret returns the current string of the secret id (name or ARN).
// A binary secret, or an empty one, is an error: the document is YAML.
func ReadSecret(ctx context.Context, c SecretReader, id string) ([]byte, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return nil, fmt.Errorf("config: reading the secret %s: %w", id, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return nil, fmt.Errorf("config: the secret %s holds no string (want a config.yml document)", id)
	}
	return []byte(*out.SecretString), nil
}
