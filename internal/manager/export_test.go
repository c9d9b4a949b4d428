package manager

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// The manager's write primitives, exported for its own tests only: callers
// outside say what they mean through its verbs and intents, and tests of
// other packages move instances through them (managertest.Move).

// Advance is advance.
func (m *Manager) Advance(ctx context.Context, id string, decide Decide) (container.Instance, error) {
	return m.advance(ctx, id, decide)
}

// Remove is remove.
func (m *Manager) Remove(ctx context.Context, id string, decide DecideRemoval) error {
	return m.remove(ctx, id, decide)
}

// Claim is ClaimItem without an outbox item to mark.
func (m *Manager) Claim(ctx context.Context, id string, op container.Op, node string, at time.Time) (container.Instance, error) {
	return m.ClaimItem(ctx, id, op, node, "", at)
}
