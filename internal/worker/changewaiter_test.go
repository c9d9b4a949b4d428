package worker_test

import (
	"github.com/berth-io/berth/internal/runtime/kubernetes"
	"github.com/berth-io/berth/internal/worker"
)

// Here rather than beside the interface: the worker package must not link
// client-go (the api function links it through wiring).
var _ worker.ChangeWaiter = (*kubernetes.Runtime)(nil)
