package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
)

// checker collects validation failures, each with the source of its key.
type checker struct {
	src  *sources
	errs []error
}

func (c *checker) fail(key, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Key: key, Source: c.src.of(key), Err: fmt.Errorf(format, args...)})
}

func (c *checker) atLeast(key string, v, min int64) {
	if v < min {
		c.fail(key, "must be ≥ %d, got %d", min, v)
	}
}

func (c *checker) positive(key string, d time.Duration) {
	if d <= 0 {
		c.fail(key, "must be > 0, got %s", d)
	}
}

func (c *checker) notEmpty(key, v string) {
	if strings.TrimSpace(v) == "" {
		c.fail(key, "must not be empty")
	}
}

func oneOf[T ~string](c *checker, key string, v T, allowed ...T) {
	if !slices.Contains(allowed, v) {
		c.fail(key, "must be one of %s, got %q", joinAll(allowed), v)
	}
}

func joinAll[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// absClean requires an absolute path in its shortest form, so that a
// prefix comparison against it ("is this under the root?") means what it
// says: /srv/berth/../etc would not.
func (c *checker) absClean(key, p string) bool {
	switch {
	case p == "":
		c.fail(key, "must not be empty")
	case !filepath.IsAbs(p):
		c.fail(key, "must be an absolute path, got %q", p)
	case filepath.Clean(p) != p:
		c.fail(key, "must be a clean path (%q), got %q", filepath.Clean(p), p)
	default:
		return true
	}
	return false
}

// root checks a host-path root a node allows, by the one rule every runtime
// shares (hostpolicy.CheckRoot).
func (c *checker) root(key, root string) {
	if err := hostpolicy.CheckRoot(root); err != nil {
		c.fail(key, "%w", err)
	}
}

// validate checks the merged configuration and returns every failure.
func validate(cfg *Config, src *sources) []error {
	c := &checker{src: src}
	c.container(&cfg.Container)
	c.server(&cfg.Server)
	c.secrets(&cfg.Secrets)
	c.store(&cfg.Store)
	c.auth(&cfg.Auth)
	c.metricsToken(cfg.Server.MetricsToken, cfg.Auth.Tokens)
	c.docker(&cfg.Docker)
	c.kubernetes(&cfg.Kubernetes)
	c.queue(&cfg.Queue)
	c.webhooks(&cfg.Webhooks)
	c.quotas(&cfg.Quotas)
	c.fleet(&cfg.Fleet)
	return c.errs
}

func (c *checker) container(ct *Container) {
	policies := []CleanupPolicy{CleanupNone, CleanupStop, CleanupDelete}
	oneOf(c, "container.dag_node_cleanup_on_failed", ct.DAGNodeCleanupOnFailed, policies...)
	oneOf(c, "container.dag_node_cleanup_on_dag_finished", ct.DAGNodeCleanupOnDAGFinished, policies...)
	c.atLeast("container.create_queue_max_concurrency", int64(ct.CreateQueueMaxConcurrency), 1)
	c.atLeast("container.create_queue_max_pending", int64(ct.CreateQueueMaxPending), 1)
	c.atLeast("container.create_queue_max_pending_per_owner", int64(ct.CreateQueueMaxPendingPerOwner), 0)
	c.positive("container.create_start_timeout", ct.CreateStartTimeout)
	c.atLeast("container.max_attempts", int64(ct.MaxAttempts), 1)
	c.positive("container.unavailable_retry_for", ct.UnavailableRetryFor)
	if ct.UnavailableRetryFor > MaxUnavailableRetryFor {
		c.fail("container.unavailable_retry_for", "must be at most %s, got %s", MaxUnavailableRetryFor, ct.UnavailableRetryFor)
	}
	if ct.StopGracePeriod < 0 {
		c.fail("container.stop_grace_period", "must be ≥ 0, got %s", ct.StopGracePeriod)
	}
	c.absClean("container.workspace_root", ct.WorkspaceRoot)
	c.positive("container.outbox_sweep_after", ct.OutboxSweepAfter)
	c.positive("container.reconcile_every", ct.ReconcileEvery)
	c.positive("container.orphan_grace", ct.OrphanGrace)
	if ct.DefaultLifetime < 0 {
		c.fail("container.default_lifetime", "must be ≥ 0 (0: none), got %s", ct.DefaultLifetime)
	}
	if ct.MaxLifetime < 0 {
		c.fail("container.max_lifetime", "must be ≥ 0 (0: no cap), got %s", ct.MaxLifetime)
	}
	if ct.StoppedRetention < 0 {
		c.fail("container.stopped_retention", "must be ≥ 0 (0: kept until deleted), got %s", ct.StoppedRetention)
	}
	if ct.FailedRetention < 0 {
		c.fail("container.failed_retention", "must be ≥ 0 (0: kept until deleted), got %s", ct.FailedRetention)
	}
	if ct.MaxLifetime > 0 && ct.DefaultLifetime > ct.MaxLifetime {
		c.fail("container.default_lifetime", "must be at most container.max_lifetime (%s), got %s", ct.MaxLifetime, ct.DefaultLifetime)
	}
	if len(ct.AllowedRuntimes) == 0 {
		c.fail("container.allowed_runtimes", "must name at least one runtime (%s or %s)",
			container.RuntimeDocker, container.RuntimeKubernetes)
	}
	for i, r := range ct.AllowedRuntimes {
		key := fmt.Sprintf("container.allowed_runtimes[%d]", i)
		oneOf(c, key, r, container.RuntimeDocker, container.RuntimeKubernetes)
		if slices.Index(ct.AllowedRuntimes, r) < i {
			c.fail(key, "%q is listed twice", r)
		}
	}
}

func (c *checker) server(s *Server) {
	// Any host is accepted: "" and 0.0.0.0 are deliberate choices.
	if _, port, err := net.SplitHostPort(s.Addr); err != nil {
		c.fail("server.addr", "want host:port, got %q: %w", s.Addr, err)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		c.fail("server.addr", "want a port number 0-65535, got %q", port)
	}
	c.notEmpty("server.data_dir", s.DataDir)
	c.atLeast("server.request_body_limit", s.RequestBodyLimit, 1)
	c.positive("server.wait_max", s.WaitMax)
	oneOf(c, "server.metrics", s.Metrics, MetricsNone, MetricsStdout)
	// Messages here must never quote the token.
	if tok := s.MetricsToken.Reveal(); strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		c.fail("server.metrics_token", "must not contain spaces or control characters (it travels in an Authorization header)")
	}
	c.atLeast("server.max_waiters", int64(s.MaxWaiters), 1)
	c.atLeast("server.max_waiters_per_caller", int64(s.MaxWaitersPerCaller), 1)
	c.atLeast("server.max_follows", int64(s.MaxFollows), 1)
	c.atLeast("server.max_follows_per_caller", int64(s.MaxFollowsPerCaller), 1)
	c.positive("server.exec_max_timeout", s.ExecMaxTimeout)
	c.atLeast("server.max_execs_per_owner", int64(s.MaxExecsPerOwner), 1)
	c.atLeast("server.max_execs_per_container", int64(s.MaxExecsPerContainer), 1)
	c.atLeast("server.exec_output_limit", int64(s.ExecOutputLimit), 1)
	c.positive("server.read_header_timeout", s.ReadHeaderTimeout)
	c.positive("server.read_timeout", s.ReadTimeout)
	c.positive("server.idle_timeout", s.IdleTimeout)
	c.atLeast("server.max_header_bytes", int64(s.MaxHeaderBytes), 1)
	if s.WriteTimeout <= s.ExecMaxTimeout {
		c.fail("server.write_timeout", "must exceed server.exec_max_timeout (%s), or a long exec's answer is cut off; got %s", s.ExecMaxTimeout, s.WriteTimeout)
	}
	if s.WriteTimeout <= s.WaitMax {
		c.fail("server.write_timeout", "must exceed server.wait_max (%s), or a long GET /wait is cut off; got %s", s.WaitMax, s.WriteTimeout)
	}
}

// metricsToken refuses a scraper's token that is also a user's: a
// request with it would be both, and the user could not be told apart.
func (c *checker) metricsToken(tok Secret, users Tokens) {
	for i, u := range users {
		if tok != "" && u.Token == tok {
			c.fail("server.metrics_token", "is also the token of auth.tokens[%d] (%s): give the scraper a token of its own", i, u.User)
		}
	}
}

func (c *checker) secrets(s *Secrets) {
	oneOf(c, "secrets.source", s.Source, SecretsNone, SecretsFile, SecretsEnv, SecretsSSM)
	switch s.Source {
	case SecretsFile:
		c.absClean("secrets.file", s.File)
	case SecretsEnv:
		c.notEmpty("secrets.env_prefix", s.EnvPrefix)
	case SecretsSSM:
		if !strings.HasPrefix(s.SSMPrefix, "/") {
			c.fail("secrets.ssm_prefix", "must be a parameter path starting with /, got %q", s.SSMPrefix)
		}
	}
}

// tablePrefix keeps table names within DynamoDB's alphabet.
var tablePrefix = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,200}$`)

func (c *checker) store(s *Store) {
	oneOf(c, "store.backend", s.Backend, StoreBolt, StoreDynamoDB)
	switch s.Backend {
	case StoreBolt:
		c.notEmpty("store.bolt_path", s.BoltPath)
	case StoreDynamoDB:
		if !tablePrefix.MatchString(s.TablePrefix) {
			c.fail("store.table_prefix", "may hold only letters, digits, '_', '.' and '-' (at most 200), got %q", s.TablePrefix)
		}
	}
}

func (c *checker) auth(a *Auth) {
	c.notEmpty("auth.admin_claim", a.AdminClaim)
	c.notEmpty("auth.admin_group", a.AdminGroup)
	if (a.OIDCIssuer == "") != (a.OIDCClientID == "") {
		c.fail("auth.oidc_client_id", "auth.oidc_issuer and auth.oidc_client_id go together (the console's identity provider and its client there)")
	}
	if a.OIDCIssuer != "" && !oidcIssuerOK(a.OIDCIssuer) {
		c.fail("auth.oidc_issuer", "must be an https URL (http only on a loopback address), got %q", a.OIDCIssuer)
	}
	for i, t := range a.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		// Messages here must never quote the token.
		switch tok := t.Token.Reveal(); {
		case tok == "":
			c.fail(key, "token must be a non-empty string")
		case strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			c.fail(key, "token must not contain spaces or control characters (it travels in an Authorization header)")
		}
		c.notEmpty(key+".user", t.User)
	}
}

// dns1123Label is a Kubernetes namespace name.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (c *checker) kubernetes(k *Kubernetes) {
	seen := make(map[string]int)
	for i, cl := range k.Clusters {
		key := fmt.Sprintf("kubernetes.clusters[%d]", i)
		if cl.Name == "" {
			c.fail(key+".name", "must not be empty")
		} else if first, dup := seen[cl.Name]; dup {
			c.fail(key+".name", "%q is already the name of kubernetes.clusters[%d]", cl.Name, first)
		} else {
			seen[cl.Name] = i
		}
		if strings.Contains(cl.Name, "/") {
			c.fail(key+".name", "must not contain '/' (it separates the cluster from the node in runtime_node_name), got %q", cl.Name)
		}
		if cl.EKSCluster != "" && (cl.Kubeconfig != "" || cl.Context != "") {
			c.fail(key+".eks_cluster", "a cluster is reached through EKS or through a kubeconfig, not both")
		}
		if cl.Region != "" && cl.EKSCluster == "" {
			c.fail(key+".region", "only applies with eks_cluster")
		}
		for j, r := range cl.AllowedHostPathRoots {
			c.root(fmt.Sprintf("%s.allowed_host_path_roots[%d]", key, j), r)
		}
		if !dns1123Label.MatchString(cl.Namespace) {
			c.fail(key+".namespace", "must be a DNS-1123 label (lower-case letters, digits, '-'; at most 63), got %q", cl.Namespace)
		}
		c.atLeast(key+".capacity", int64(cl.Capacity), 0)
	}
}

// maxVisibility is SQS's limit on a message's visibility timeout.
const maxVisibility = 12 * time.Hour

func (c *checker) queue(q *Queue) {
	oneOf(c, "queue.backend", q.Backend, QueueMemory, QueueSQS)
	c.positive("queue.visibility_timeout", q.VisibilityTimeout)
	if q.VisibilityTimeout > maxVisibility {
		c.fail("queue.visibility_timeout", "must be ≤ %s (the SQS limit), got %s", maxVisibility, q.VisibilityTimeout)
	} else if q.VisibilityTimeout > 0 && q.VisibilityTimeout%time.Second != 0 {
		c.fail("queue.visibility_timeout", "must be whole seconds (SQS counts in seconds), got %s", q.VisibilityTimeout)
	}
	if q.Backend != QueueSQS {
		return
	}
	for _, u := range []struct{ key, v string }{
		{"queue.create_queue_url", q.CreateQueueURL},
		{"queue.lifecycle_queue_url", q.LifecycleQueueURL},
	} {
		key, v := u.key, u.v
		if v == "" {
			c.fail(key, "is required with queue.backend sqs")
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			c.fail(key, "want an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got %q", v)
		}
	}
	if q.CreateQueueURL != "" && q.CreateQueueURL == q.LifecycleQueueURL {
		c.fail("queue.lifecycle_queue_url", "must differ from queue.create_queue_url: creates must never delay a stop")
	}
	if q.NotifyQueueURL == "" {
		return
	}
	if u, err := url.Parse(q.NotifyQueueURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		c.fail("queue.notify_queue_url", "want an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got %q", q.NotifyQueueURL)
	}
	if q.NotifyQueueURL == q.CreateQueueURL || q.NotifyQueueURL == q.LifecycleQueueURL {
		c.fail("queue.notify_queue_url", "must differ from queue.create_queue_url and queue.lifecycle_queue_url: a slow webhook receiver must never delay a create or a stop")
	}
}

// oidcIssuerOK: an issuer the console may send browsers to and fetch
// tokens from: https, or http on a loopback address (a provider on the
// same machine).
func oidcIssuerOK(issuer string) bool {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		ip := net.ParseIP(h)
		return h == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return false
}

func (c *checker) quotas(q *Quotas) {
	if _, err := q.Default.Parse(); err != nil {
		f, msg, _ := strings.Cut(err.Error(), ": ")
		c.fail("quotas.default."+f, "%s", msg)
	}
}
