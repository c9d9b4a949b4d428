package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// ledgerAttempts bounds the retries of a ledger write that lost a race to
// another (each retry reads the ledger again and checks again).
const ledgerAttempts = 8

// ledgerCache holds the last bind ledger this manager read or wrote. A
// stale copy is safe for a create's check: the ledger only gains entries
// that were checked against the ones a create's template already has, and
// a retired entry still in the copy only refuses more.
type ledgerCache struct {
	mu sync.Mutex
	l  container.BindLedger
	ok bool
}

func (c *ledgerCache) get() (container.BindLedger, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l, c.ok
}

func (c *ledgerCache) put(l container.BindLedger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || l.Version >= c.l.Version {
		c.l, c.ok = l, true
	}
}

// bindLedger returns the ledger, from the cache unless fresh. A store with
// no ledger (new, or upgraded from a berth without one) gets one seeded
// from its stored templates first.
func (m *Manager) bindLedger(ctx context.Context, fresh bool) (container.BindLedger, error) {
	if !fresh {
		if l, ok := m.ledger.get(); ok {
			return l, nil
		}
	}
	for range ledgerAttempts {
		l, err := m.store.GetBindLedger(ctx)
		if err != nil {
			return l, fmt.Errorf("reading the bind ledger: %w", err)
		}
		if l.Version > 0 {
			m.ledger.put(l)
			return l, nil
		}
		ts, err := m.store.ListTemplates(ctx)
		if err != nil {
			return l, fmt.Errorf("listing templates to seed the bind ledger: %w", err)
		}
		for _, t := range ts {
			l = hostpolicy.Record(l, t.Name, hostpolicy.Binds(t), m.workspaceRoot)
		}
		l, err = m.store.PutBindLedger(ctx, l)
		switch {
		case errors.Is(err, store.ErrBindLedgerChanged):
			continue // another process seeded it
		case err != nil:
			return l, fmt.Errorf("seeding the bind ledger: %w", err)
		}
		m.log.InfoContext(ctx, "bind ledger seeded from the stored templates", "templates", len(ts), "entries", len(l.Entries))
		m.ledger.put(l)
		return l, nil
	}
	return container.BindLedger{}, fmt.Errorf("seeding the bind ledger: %w", store.ErrBindLedgerChanged)
}

// ledgerProblems turns the policy's refusals into a validation error.
func ledgerProblems(ps []hostpolicy.Problem) error {
	var f fields
	for _, p := range ps {
		f.add(p.Field, "%s", p.Message)
	}
	return f.err()
}

// putTemplateWithLedger checks t's bind sources against the ledger and
// stores t with them recorded, in one transaction conditioned on the
// ledger's version; a lost race reads the ledger again and checks again.
func (m *Manager) putTemplateWithLedger(ctx context.Context, t container.Template) (container.Template, bool, error) {
	binds := hostpolicy.Binds(t)
	if len(binds) == 0 {
		return m.store.PutTemplate(ctx, t)
	}
	for attempt := range ledgerAttempts {
		l, err := m.bindLedger(ctx, attempt > 0)
		if err != nil {
			return container.Template{}, false, err
		}
		if err := ledgerProblems(hostpolicy.Check(l, t.Name, binds, m.workspaceRoot)); err != nil {
			return container.Template{}, false, err
		}
		next := hostpolicy.Record(l, t.Name, binds, m.workspaceRoot)
		stored, created, err := m.store.PutTemplateWithLedger(ctx, t, next)
		if errors.Is(err, store.ErrBindLedgerChanged) {
			continue
		}
		if err != nil {
			return stored, created, err
		}
		next.Version++
		m.ledger.put(next)
		return stored, created, nil
	}
	return container.Template{}, false, fmt.Errorf("the bind ledger kept changing: %w", store.ErrBindLedgerChanged)
}

// checkLedgerAtCreate refuses a create from a template whose bind sources
// break the ledger's rules. A stored template the ledger does not record
// as it is (written past the manager) is recorded first: what its
// containers write must bind every later template too.
func (m *Manager) checkLedgerAtCreate(ctx context.Context, t container.Template) error {
	binds := hostpolicy.Binds(t)
	if len(binds) == 0 {
		return nil
	}
	l, err := m.bindLedger(ctx, false)
	if err != nil {
		return err
	}
	for attempt := 0; !hostpolicy.Covers(l, t.Name, binds, m.workspaceRoot); attempt++ {
		if attempt == ledgerAttempts {
			return fmt.Errorf("recording template %q in the bind ledger: %w", t.Name, store.ErrBindLedgerChanged)
		}
		if l, err = m.bindLedger(ctx, true); err != nil {
			return err
		}
		if hostpolicy.Covers(l, t.Name, binds, m.workspaceRoot) {
			break
		}
		next, err := m.store.PutBindLedger(ctx, hostpolicy.Record(l, t.Name, binds, m.workspaceRoot))
		if errors.Is(err, store.ErrBindLedgerChanged) {
			continue
		}
		if err != nil {
			return fmt.Errorf("recording template %q in the bind ledger: %w", t.Name, err)
		}
		m.log.WarnContext(ctx, "template recorded in the bind ledger at create (it was stored past the manager)", "template", t.Name)
		m.ledger.put(next)
		l = next
	}
	return ledgerProblems(hostpolicy.Check(l, t.Name, binds, m.workspaceRoot))
}

// ErrInUse is a bind ledger entry a stored template or an instance still
// mounts writable, which cannot be retired (409).
var ErrInUse = errors.New("in use")

// BindLedger returns the bind ledger (admins only).
func (m *Manager) BindLedger(ctx context.Context, c identity.Caller) (container.BindLedger, error) {
	if !c.Admin {
		return container.BindLedger{}, fmt.Errorf("the bind ledger is for admins: %w", ErrForbidden)
	}
	return m.bindLedger(ctx, true)
}

// RetireBind removes the ledger entry id (admins only), or, while a stored
// template still mounts its pattern read-only, clears its writable flag.
// It is refused (ErrInUse) while any stored template, or any instance's
// resolved spec, mounts the pattern writable: their containers can still
// plant links. The admin is expected to have cleaned the host directories
// under it first (docs/deploy.md); the action is logged.
func (m *Manager) RetireBind(ctx context.Context, c identity.Caller, id string) (container.BindEntry, error) {
	if !c.Admin {
		return container.BindEntry{}, fmt.Errorf("retiring bind ledger entries is for admins: %w", ErrForbidden)
	}
	for range ledgerAttempts {
		// The ledger first: a template write after this read changes its
		// version, so the write below fails and the checks run again.
		l, err := m.bindLedger(ctx, true)
		if err != nil {
			return container.BindEntry{}, err
		}
		i := slices.IndexFunc(l.Entries, func(e container.BindEntry) bool { return e.ID == id })
		if i < 0 {
			return container.BindEntry{}, fmt.Errorf("bind ledger entry %.64q: %w", id, ErrNotFound)
		}
		e := l.Entries[i]
		p, err := hostpolicy.Parse(e.Pattern, "")
		if err != nil {
			return container.BindEntry{}, fmt.Errorf("bind ledger entry %s: %w", id, err)
		}
		readBy, err := m.templatesMounting(ctx, p, e.ID)
		if err != nil {
			return container.BindEntry{}, err
		}
		if err := m.instancesMountingWritable(ctx, p); err != nil {
			return container.BindEntry{}, err
		}
		next := l
		next.Entries = slices.Delete(slices.Clone(l.Entries), i, i+1)
		if len(readBy) > 0 {
			e.Writable, e.WritableBy, e.Templates = false, nil, readBy
			next.Entries = slices.Insert(next.Entries, i, e)
		}
		stored, err := m.store.PutBindLedger(ctx, next)
		if errors.Is(err, store.ErrBindLedgerChanged) {
			continue
		}
		if err != nil {
			return container.BindEntry{}, fmt.Errorf("retiring bind ledger entry %s: %w", id, err)
		}
		m.ledger.put(stored)
		m.log.WarnContext(ctx, "bind ledger entry retired", "entry", id, "pattern", e.Pattern,
			"kept_read_only", len(readBy) > 0, "by", c.User)
		return e, nil
	}
	return container.BindEntry{}, fmt.Errorf("the bind ledger kept changing: %w", store.ErrBindLedgerChanged)
}

// templatesMounting returns the stored templates that mount p read-only,
// and ErrInUse if any mounts it writable.
func (m *Manager) templatesMounting(ctx context.Context, p hostpolicy.Pattern, id string) ([]string, error) {
	ts, err := m.store.ListTemplates(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	var readBy []string
	for _, t := range ts {
		for _, b := range hostpolicy.Binds(t) {
			q, err := hostpolicy.Parse(b.Source, m.workspaceRoot)
			if err != nil || q.Source != p.Source {
				continue
			}
			if !b.ReadOnly {
				return nil, fmt.Errorf("bind ledger entry %s (%q): template %q mounts it writable (%s); make that read_only or move it first: %w",
					id, p.Source, t.Name, b.Field, ErrInUse)
			}
			readBy = append(readBy, t.Name)
		}
	}
	return readBy, nil
}

// instancesMountingWritable is ErrInUse if any instance (running or not:
// a stopped one starts again with its spec) mounts a path of p writable.
func (m *Manager) instancesMountingWritable(ctx context.Context, p hostpolicy.Pattern) error {
	q := store.ListQuery{Limit: 100}
	for {
		page, err := m.store.ListInstances(ctx, q)
		if err != nil {
			return fmt.Errorf("listing instances: %w", err)
		}
		for _, in := range page.Items {
			for _, v := range in.Spec.Volumes {
				if v.Type == container.VolumeBind && !v.ReadOnly && p.Matches(v.Source) {
					return fmt.Errorf("%q: instance %s (owner %q) mounts %q writable; delete it first: %w",
						p.Source, in.ID, in.Owner, v.Source, ErrInUse)
				}
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		q.Cursor = page.NextCursor
	}
}
