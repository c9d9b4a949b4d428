package berthstack

import (
	"maps"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/config"
)

// The functions' configuration variables. All but envConfigSecret and envConfigParameter are
// internal/config keys (a test holds them to config.EnvKeys); envConfigParameter names the
// parameter (name:version) the functions load the configuration document from, envConfigSecret
// the secret with its secret material.
const (
	envTablePrefix        = "BERTH_STORE_TABLE_PREFIX"
	envCreateQueueURL     = "BERTH_QUEUE_CREATE_QUEUE_URL"
	envLifecycleQueueURL  = "BERTH_QUEUE_LIFECYCLE_QUEUE_URL"
	envNotifyQueueURL     = "BERTH_QUEUE_NOTIFY_QUEUE_URL"
	envAdminClaim         = "BERTH_AUTH_ADMIN_CLAIM"
	envAdminGroup         = "BERTH_AUTH_ADMIN_GROUP"
	envOIDCIssuer         = "BERTH_AUTH_OIDC_ISSUER"
	envOIDCClientID       = "BERTH_AUTH_OIDC_CLIENT_ID"
	envMaxConcurrency     = "BERTH_CONTAINER_CREATE_QUEUE_MAX_CONCURRENCY"
	envMaxPending         = "BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING"
	envCreateStartTimeout = "BERTH_CONTAINER_CREATE_START_TIMEOUT"
	envMaxAttempts        = "BERTH_CONTAINER_MAX_ATTEMPTS"
	envStopGracePeriod    = "BERTH_CONTAINER_STOP_GRACE_PERIOD"
	envAllowedRuntimes    = "BERTH_CONTAINER_ALLOWED_RUNTIMES"
	envWorkspaceRoot      = "BERTH_CONTAINER_WORKSPACE_ROOT"
	envOutboxSweepAfter   = "BERTH_CONTAINER_OUTBOX_SWEEP_AFTER"
	envOrphanGrace        = "BERTH_CONTAINER_ORPHAN_GRACE"
	envDockerScope        = "BERTH_DOCKER_SCOPE"
	envConfigSecret       = "BERTH_CONFIG_SECRET"
	envConfigParameter    = "BERTH_CONFIG_PARAMETER"
	envSecretsSource      = "BERTH_SECRETS_SOURCE"
	envSecretsSSMPrefix   = "BERTH_SECRETS_SSM_PREFIX"
	envEventBus           = "BERTH_WEBHOOKS_EVENT_BUS"
	envFleetShards        = "BERTH_FLEET_SHARDS"
	envReconcileShardURL  = "BERTH_FLEET_RECONCILE_SHARD_QUEUE_URL"
	envWatchShardURL      = "BERTH_FLEET_WATCH_SHARD_QUEUE_URL"
)

// commonEnv is what every function reads the same way.
func commonEnv(p Props) map[string]*string {
	return map[string]*string{
		envTablePrefix:        jsii.String(p.TablePrefix),
		envMaxConcurrency:     jsii.String(strconv.Itoa(p.CreateQueueMaxConcurrency)),
		envMaxPending:         jsii.String(strconv.Itoa(p.CreateQueueMaxPending)),
		envCreateStartTimeout: jsii.String(strconv.Itoa(p.CreateStartTimeoutSeconds) + "s"),
		envMaxAttempts:        jsii.String(strconv.Itoa(p.MaxAttempts)),
		envStopGracePeriod:    jsii.String(strconv.Itoa(p.StopGracePeriodSeconds) + "s"),
		envAllowedRuntimes:    jsii.String(p.AllowedRuntimes),
		envWorkspaceRoot:      jsii.String(p.WorkspaceRoot),
		// Containers carry the stack's name as their scope: two stacks sharing a Docker host
		// never reconcile each other's containers.
		envDockerScope: awscdk.Aws_STACK_NAME(),
		// Every function that writes a status change writes its event-bus delivery in the same
		// transaction; only the notify function puts it.
		envEventBus: jsii.String(p.EventBusName),
	}
}

func queueEnv(pl *Pipeline) map[string]*string {
	return map[string]*string{
		envCreateQueueURL:    pl.Create.Queue.QueueUrl(),
		envLifecycleQueueURL: pl.Lifecycle.Queue.QueueUrl(),
	}
}

// notifyQueueEnv is what the functions that send to the notify queue (the dispatcher, the
// reconciler's sweep) or consume it (the notify function) add.
func notifyQueueEnv(pl *Pipeline) map[string]*string {
	return map[string]*string{envNotifyQueueURL: pl.Notify.Queue.QueueUrl()}
}

// runtimeEnv is what the functions that reach Docker hosts add: the secret with the hosts.
func runtimeEnv(p Props) map[string]*string {
	if p.RuntimeConfigSecretArn == "" {
		return nil
	}
	return map[string]*string{envConfigSecret: jsii.String(p.RuntimeConfigSecretArn)}
}

// configEnv is what every function that reads the configuration adds: the parameter with the
// document, pinned to its version.
func configEnv(p Props) map[string]*string {
	if p.ConfigParameterName == "" {
		return nil
	}
	return map[string]*string{envConfigParameter: jsii.String(p.ConfigParameterName + ":" + strconv.Itoa(p.ConfigVersion))}
}

// templateSecretsEnv is what the workers add: templates' secret_env values come from SSM
// under the deployment's path, read as containers are made and never stored.
func templateSecretsEnv(p Props) map[string]*string {
	return map[string]*string{
		envSecretsSource:    jsii.String(string(config.SecretsSSM)),
		envSecretsSSMPrefix: jsii.String(p.SecretsParameterPath),
	}
}

func merge(ms ...map[string]*string) map[string]*string {
	out := map[string]*string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// envNames lists the config variables above, for the test that holds them to config.
func envNames() []string {
	return []string{envTablePrefix, envCreateQueueURL, envLifecycleQueueURL, envNotifyQueueURL, envAdminClaim, envAdminGroup, envOIDCIssuer, envOIDCClientID,
		envMaxConcurrency, envMaxPending, envCreateStartTimeout, envMaxAttempts, envStopGracePeriod,
		envAllowedRuntimes, envWorkspaceRoot, envOutboxSweepAfter, envOrphanGrace, envDockerScope,
		envSecretsSource, envSecretsSSMPrefix, envEventBus}
}
