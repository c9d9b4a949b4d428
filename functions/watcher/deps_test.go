package main

import (
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// TestLinksRuntimes: the watcher holds Docker hosts' event streams and
// Kubernetes clusters' Pod watches, so it links both clients.
func TestLinksRuntimes(t *testing.T) {
	testenv.Links(t, "github.com/moby/moby/client", "k8s.io/client-go/kubernetes",
		"github.com/berth-io/berth/internal/runtime/kubernetes")
}
