// Package managertest holds what tests of the layers above the manager
// (worker, reconciler) do through it more than once.
package managertest

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// Create makes an instance from template tpl as c, as the API would: it is
// pending with its create item in the outbox. A failure fails the test.
func Create(t testing.TB, m *manager.Manager, c identity.Caller, tpl string) container.Instance {
	t.Helper()
	res, err := m.CreateByTemplate(context.Background(), c, manager.CreateRequest{Template: tpl}, nil, "req-"+tpl)
	if err != nil {
		t.Fatalf("creating from template %s: %v", tpl, err)
	}
	return res.Instance
}
