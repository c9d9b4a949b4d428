package berthstack

import (
	"maps"
	"strconv"

	"github.com/aws/jsii-runtime-go"
)

// The functions' configuration variables (internal/config derives them from its keys; a test
// checks every name here is one config reads).
const (
	envTablePrefix        = "BERTH_STORE_TABLE_PREFIX"
	envCreateQueueURL     = "BERTH_QUEUE_CREATE_QUEUE_URL"
	envLifecycleQueueURL  = "BERTH_QUEUE_LIFECYCLE_QUEUE_URL"
	envAdminGroup         = "BERTH_AUTH_ADMIN_GROUP"
	envMaxConcurrency     = "BERTH_CONTAINER_CREATE_QUEUE_MAX_CONCURRENCY"
	envMaxPending         = "BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING"
	envMaxAttempts        = "BERTH_CONTAINER_MAX_ATTEMPTS"
	envCreateStartTimeout = "BERTH_CONTAINER_CREATE_START_TIMEOUT"
)

func storeEnv(t *Tables) map[string]*string {
	return map[string]*string{envTablePrefix: t.Prefix}
}

func queueEnv(pl *Pipeline) map[string]*string {
	return map[string]*string{
		envCreateQueueURL:    pl.Create.Queue.QueueUrl(),
		envLifecycleQueueURL: pl.Lifecycle.Queue.QueueUrl(),
	}
}

// containerEnv is the container settings a function that admits or runs creates must agree on.
func containerEnv(p Props) map[string]*string {
	return map[string]*string{
		envMaxConcurrency: jsii.String(strconv.Itoa(p.CreateQueueMaxConcurrency)),
		envMaxPending:     jsii.String(strconv.Itoa(p.CreateQueueMaxPending)),
		envMaxAttempts:    jsii.String(strconv.Itoa(p.MaxAttempts)),
	}
}

func merge(ms ...map[string]*string) map[string]*string {
	out := map[string]*string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// envNames lists the variable names used above, for the test that holds them to config.
func envNames() []string {
	return []string{envTablePrefix, envCreateQueueURL, envLifecycleQueueURL, envAdminGroup,
		envMaxConcurrency, envMaxPending, envMaxAttempts, envCreateStartTimeout}
}
