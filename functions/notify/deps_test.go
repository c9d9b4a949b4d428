package main

import (
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// TestNoRuntimeClients: the notify function never links a Docker or
// Kubernetes client: it delivers, and reaches no runtime.
func TestNoRuntimeClients(t *testing.T) {
	testenv.NoDeps(t, "github.com/berth-io/berth/internal/notify/webhook", testenv.RuntimeClients)
}
