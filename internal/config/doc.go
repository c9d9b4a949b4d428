// Package config loads berth's configuration: config.yml first, then
// environment variables on top, then validation of the result.
//
// One file describes both deployments. `berth serve` reads it from disk;
// the Lambda functions usually have no file and take everything from their
// environment, which is why every scalar key has an environment variable.
//
// # Sources, in order
//
//  1. Defaults ([Default]): the container-worker-queue keys' values plus
//     berth's own, chosen so that `berth serve` runs with no file at all.
//     Each key's default is a Default… constant here, next to the key: the
//     packages that take the same value as an option of their own (httpapi,
//     client, reconcile, lambdahttp) refer to that constant instead of
//     writing the number again. config imports none of them, so every
//     package may import it.
//  2. The YAML file, if a path is given. Unknown keys are errors, so a typo
//     fails at start-up instead of silently keeping a default.
//  3. Environment variables, named BERTH_<SECTION>_<KEY> in upper case, e.g.
//     BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING=10, BERTH_SERVER_ADDR,
//     BERTH_STORE_BACKEND, BERTH_QUEUE_CREATE_QUEUE_URL. The names are
//     derived from the yaml tags ([EnvKeys] lists them all): booleans take
//     strconv.ParseBool forms, durations Go duration strings ("5m"), lists
//     comma-separated values.
//
// Structured keys are YAML-only, because they do not fit in one variable:
// docker.hosts, docker.registries, auth.tokens and kubernetes.clusters.
//
// Every invalid value is reported, not just the first, each naming its key
// and where the value came from (file:line, the environment variable, or
// the default); see [FieldError].
//
// # Secrets
//
// auth.tokens keys, docker.registries passwords and inline docker TLS keys
// are secrets. They print as "[redacted]" through fmt (any verb), slog and
// encoding/json, so logging the whole *Config is safe.
package config
