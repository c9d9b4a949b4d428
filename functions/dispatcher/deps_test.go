package main

import (
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// TestNoRuntimeClients: the dispatcher function never links a Docker or
// Kubernetes client.
func TestNoRuntimeClients(t *testing.T) {
	testenv.NoDeps(t, "github.com/berth-io/berth/internal/outbox", testenv.RuntimeClients)
}
