package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/store"
)

// CreateRequest is POST /api/containers.
type CreateRequest struct {
	Template string            `json:"template"`
	Name     string            `json:"name,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Group    string            `json:"group,omitempty"`
	// Lifetime asks for a lifetime other than the template's default (a
	// duration, at most the template's max).
	Lifetime string `json:"lifetime,omitempty"`
}

// Idempotency identifies a request that may be repeated.
type Idempotency struct {
	Key string
	// Hash is a digest of the request body: a repeat with the same key and
	// another hash is refused.
	Hash string
	// Response encodes the first response to the request, in whatever form
	// its caller answers in; a repeat gets exactly these bytes back
	// (CreateResult.Replayed).
	Response func(container.Instance) []byte
}

// CreateResult is a create's outcome. Replayed is set when an idempotent
// repeat returned the first response (as Idempotency.Response encoded it)
// instead of creating anything; Instance is then empty.
type CreateResult struct {
	Instance container.Instance
	Replayed []byte
}

// CreateByTemplate validates the request against its template, resolves the
// container spec and writes the pending instance, its create request and
// its first event in one store call. The work happens in the background.
//
// A create usually makes that one store call: the template comes from the
// manager's cache and is checked by the store in the same transaction
// (templateCache), and an Idempotency-Key is checked by the same
// transaction too; its record is read only when the create fails (a repeat
// answers as the first request did, whatever this one ran into).
func (m *Manager) CreateByTemplate(ctx context.Context, c identity.Caller, req CreateRequest, idem *Idempotency, requestID string) (CreateResult, error) {
	res, err := m.create(ctx, c, req, idem, requestID, true)
	for try := 0; try < 3 && errors.Is(err, store.ErrTemplateChanged); try++ {
		// The cached copy is stale (or the template changed again since
		// the read): build the create again from a read.
		m.templates.forget(req.Template)
		res, err = m.create(ctx, c, req, idem, requestID, false)
	}
	if err != nil && idem != nil && !errors.Is(err, ErrIdempotencyKey) {
		rec, gerr := m.store.GetIdempotency(ctx, c.User, idem.Key)
		switch {
		case gerr == nil:
			return m.replay(rec, idem)
		case !errors.Is(gerr, store.ErrNotFound):
			return CreateResult{}, fmt.Errorf("reading idempotency key: %w", gerr)
		}
	}
	return res, err
}

// create is one attempt of CreateByTemplate, from the cached template when
// cached is set and there is one (then the store may answer
// ErrTemplateChanged), else from a read of it.
func (m *Manager) create(ctx context.Context, c identity.Caller, req CreateRequest, idem *Idempotency, requestID string, cached bool) (CreateResult, error) {
	if err := m.Runnable(); err != nil {
		return CreateResult{}, err
	}
	if err := checkRequest(req); err != nil {
		return CreateResult{}, err
	}
	var tpl container.Template
	if cached {
		tpl, cached = m.templates.get(req.Template)
	}
	if !cached {
		var err error
		tpl, err = m.store.GetTemplate(ctx, req.Template)
		if errors.Is(err, store.ErrNotFound) {
			return CreateResult{}, &ValidationError{Fields: []FieldError{{Field: "template", Message: fmt.Sprintf("no template named %q", req.Template)}}}
		}
		if err != nil {
			return CreateResult{}, fmt.Errorf("reading template %q: %w", req.Template, err)
		}
		m.templates.put(tpl)
	}
	now := m.now().UTC()
	id := container.NewID()
	name := req.Name
	if name == "" {
		name = defaultName(tpl.Name, id)
	}
	inst := container.Instance{
		ID: id, Name: name, Owner: c.User, Team: c.Team, Template: tpl.Name, Group: req.Group,
		Labels: req.Labels, Runtime: tpl.Runtime, Image: tpl.Image, Status: fsm.Pending,
		CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	if inst.Labels == nil {
		inst.Labels = map[string]string{}
	}
	spec, err := m.checkCreate(ctx, tpl, inst, req.Env)
	if err != nil {
		return CreateResult{}, err
	}
	inst.Spec = spec
	inst.Image = spec.Image
	if inst.ExpiresAt, inst.Lifetime, err = m.lifetimeAt(tpl, req.Lifetime, now); err != nil {
		return CreateResult{}, err
	}
	inst.Retention, inst.Restart = m.retentionOf(tpl), tpl.Restart.Clone()

	p := store.CreateParams{
		Instance: inst,
		Outbox: container.OutboxItem{
			ID: container.NewID(), InstanceID: id, Op: container.OpCreate, InstanceVersion: 1,
			RequestID: requestID, TraceContext: traceFrom(ctx), State: container.OutboxPending, CreatedAt: now, UpdatedAt: now,
		},
		Event: container.Event{
			InstanceID: id, Type: container.EventCreateRequested, To: fsm.Pending, At: now,
			Message: fmt.Sprintf("create from template %q", tpl.Name), Actor: c.Actor(), OnBehalfOf: c.ActingFor(),
		},
		MaxPending: m.maxPending, MaxPendingPerOwner: m.maxPerOwner,
	}
	if idem != nil {
		p.Idempotency = &store.IdempotencyRecord{
			Owner: c.User, Key: idem.Key, RequestHash: idem.Hash, Response: idem.Response(inst), CreatedAt: now,
		}
	}
	// The create commits only while the template is still this one, read
	// or cached: a bind ledger entry can then never be retired between
	// this create's checks and its commit (RetireBind).
	p.Template = &tpl
	if p.Quota, err = m.quotaLimits(ctx, inst.Owner, inst.Team); err != nil {
		return CreateResult{}, err
	}
	created, err := m.store.CreateInstance(ctx, p)
	switch {
	case errors.Is(err, store.ErrTemplateChanged):
		return CreateResult{}, err
	case errors.Is(err, store.ErrOwnerQueueFull):
		return CreateResult{}, fmt.Errorf("%d of your creates are already waiting (your share of %d): %w", m.maxPerOwner, m.maxPending, ErrQueueFull)
	case errors.Is(err, store.ErrQueueFull):
		return CreateResult{}, fmt.Errorf("%d creates are already waiting: %w", m.maxPending, ErrQueueFull)
	case errors.Is(err, store.ErrDuplicateRequest):
		// A concurrent request with the same key won the race.
		rec, gerr := m.store.GetIdempotency(ctx, c.User, idem.Key)
		if gerr != nil {
			return CreateResult{}, fmt.Errorf("reading idempotency key after a race: %w", gerr)
		}
		return m.replay(rec, idem)
	case err != nil:
		return CreateResult{}, fmt.Errorf("creating instance: %w", err)
	}
	m.log.InfoContext(ctx, "create accepted", "instance_id", id, "owner", c.User, "actor", c.Actor(), "template", tpl.Name,
		"outbox_id", p.Outbox.ID, "request_id", requestID, "op", container.OpCreate)
	return CreateResult{Instance: created}, nil
}

func (m *Manager) replay(rec store.IdempotencyRecord, idem *Idempotency) (CreateResult, error) {
	if rec.RequestHash != idem.Hash {
		return CreateResult{}, fmt.Errorf("Idempotency-Key %q was first used with another request body: %w", idem.Key, ErrIdempotencyKey)
	}
	return CreateResult{Replayed: rec.Response}, nil
}

// defaultName is "<template>-<last 8 of the id>", lower-cased and cut to a
// DNS label.
func defaultName(tpl, id string) string {
	suffix := strings.ToLower(id[len(id)-8:])
	if len(tpl) > 63-9 {
		tpl = strings.TrimRight(tpl[:63-9], "-")
	}
	return tpl + "-" + suffix
}
