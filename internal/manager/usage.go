package manager

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// Usage answers q (store.UsageStore): a caller reads their own usage as
// a user; an admin any user's or team's. Another subject is ErrForbidden;
// a query the store cannot answer wraps store.ErrInvalidParams (see
// store.UsageQuery.Check).
func (m *Manager) Usage(ctx context.Context, c identity.Caller, q store.UsageQuery) ([]store.UsageItem, error) {
	if !c.Admin && q.Subject != (store.QuotaSubject{Kind: store.QuotaUser, Name: c.User}) {
		return nil, fmt.Errorf("only admins may read another user's or a team's usage: %w", ErrForbidden)
	}
	items, err := m.store.Usage(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("reading the usage of %s: %w", q.Subject, err)
	}
	return items, nil
}
