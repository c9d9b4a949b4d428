// Package testenv tells tests where the real parts they need are running
// (DynamoDB Local, Docker engines, the SQS emulator, a kube-apiserver with
// kwok nodes) and what to do when a part is missing: skip with the reason
// locally, fail loudly in CI. It also holds the small helpers every test
// package shares (Context, Median, SyncBuffer).
//
// `make test` (scripts/test-services.sh) starts the parts and exports the
// variables read here; a developer may also point them at their own.
package testenv

import (
	"os"
	"testing"
)

// Environment variables the test harness exports.
const (
	EnvDynamoDB    = "AWS_ENDPOINT_URL_DYNAMODB" // http://127.0.0.1:PORT of DynamoDB Local
	EnvSQS         = "AWS_ENDPOINT_URL_SQS"      // http://127.0.0.1:PORT of the SQS emulator
	EnvDockerHost  = "BERTH_TEST_DOCKER_HOST"    // unix:///... of the first engine
	EnvDockerHost2 = "BERTH_TEST_DOCKER_HOST2"   // unix:///... of a second engine (placement tests)
	EnvTestImage   = "BERTH_TEST_IMAGE"          // a local image with busybox (sh, sleep, echo, ...)
	// EnvKubeconfig is a kubeconfig for a real kube-apiserver (with kwok
	// nodes) as a user holding only berth's namespaced Role.
	EnvKubeconfig = "BERTH_TEST_KUBECONFIG"
	// EnvKubeNamespace is the namespace that Role is bound in.
	EnvKubeNamespace = "BERTH_TEST_KUBE_NAMESPACE"
)

// InCI reports whether the tests run in CI, where a missing part is a failure.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing stops the test because a real part is not there: a skip with the
// reason locally, a failure in CI (where every part must be running).
func Missing(t testing.TB, what, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is required in CI and is not available: %s", what, reason)
	}
	t.Skipf("%s not available (%s); run `make test` to start it", what, reason)
}

func require(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		Missing(t, what, env+" is not set")
	}
	return v
}

// DynamoDBEndpoint returns DynamoDB Local's endpoint URL.
func DynamoDBEndpoint(t testing.TB) string { return require(t, EnvDynamoDB, "DynamoDB Local") }

// SQSEndpoint returns the SQS emulator's endpoint URL.
func SQSEndpoint(t testing.TB) string { return require(t, EnvSQS, "the SQS emulator") }

// DockerHost returns the first Docker engine's endpoint.
func DockerHost(t testing.TB) string { return require(t, EnvDockerHost, "a Docker engine") }

// DockerHost2 returns a second Docker engine's endpoint.
func DockerHost2(t testing.TB) string { return require(t, EnvDockerHost2, "a second Docker engine") }

// TestImage returns the locally built busybox test image.
func TestImage(t testing.TB) string { return require(t, EnvTestImage, "the test image") }

// Kubeconfig returns the kubeconfig of the test cluster's restricted user
// (scripts/testenv/kubernetes.sh).
func Kubeconfig(t testing.TB) string { return require(t, EnvKubeconfig, "a Kubernetes API server") }

// KubeNamespace returns the namespace the test cluster's user may use.
func KubeNamespace(t testing.TB) string {
	return require(t, EnvKubeNamespace, "a Kubernetes API server")
}
