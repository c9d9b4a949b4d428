package manager

import (
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// LifetimeDefaults are the deployment's lifetime for instances of
// templates that set none (container.default_lifetime,
// container.max_lifetime), and its retention of ended instances for
// templates that set none (container.stopped_retention,
// container.failed_retention); zero values turn each off.
type LifetimeDefaults struct {
	Default          time.Duration
	Max              time.Duration
	StoppedRetention time.Duration
	FailedRetention  time.Duration
}

// LifetimeDefaultsFrom reads them from the container section.
func LifetimeDefaultsFrom(c config.Container) LifetimeDefaults {
	return LifetimeDefaults{Default: c.DefaultLifetime, Max: c.MaxLifetime,
		StoppedRetention: c.StoppedRetention, FailedRetention: c.FailedRetention}
}

// lifetimePolicy is a template's lifetime (or the deployment's) as
// durations: def 0 means none unless a create asks for one, max 0 no cap.
type lifetimePolicy struct {
	def, max time.Duration
	onExpiry string
}

// validLifetime checks a template's lifetime: durations, default ≤ max, and
// on_expiry one of stop or delete.
func validLifetime(f *fields, l *container.Lifetime) {
	if l == nil {
		return
	}
	var def, maxD time.Duration
	if l.Default != "" {
		d, err := container.ParseDuration(l.Default)
		if err != nil {
			f.add("lifetime.default", "%v", err)
		}
		def = d
	}
	if l.Max != "" {
		d, err := container.ParseDuration(l.Max)
		if err != nil {
			f.add("lifetime.max", "%v", err)
		}
		maxD = d
	}
	if l.Default == "" && l.Max == "" {
		f.add("lifetime", "sets neither default nor max")
	}
	if def > 0 && maxD > 0 && def > maxD {
		f.add("lifetime.default", "%s is longer than max %s", l.Default, l.Max)
	}
	switch l.OnExpiry {
	case "", container.ExpiryStop, container.ExpiryDelete:
	default:
		f.add("lifetime.on_expiry", "must be one of %q, %q, got %q", container.ExpiryStop, container.ExpiryDelete, l.OnExpiry)
	}
}

// policyOf is the lifetime instances of t live under: the template's
// own, else the deployment's. A template's default left empty is its max.
// The template was validated when it was stored.
func (m *Manager) policyOf(t container.Template) lifetimePolicy {
	if t.Lifetime == nil {
		return lifetimePolicy{def: m.lifetimes.Default, max: m.lifetimes.Max, onExpiry: container.ExpiryStop}
	}
	p := lifetimePolicy{onExpiry: t.Lifetime.OnExpiry}
	if p.onExpiry == "" {
		p.onExpiry = container.ExpiryStop
	}
	p.def, _ = container.ParseDuration(t.Lifetime.Default)
	p.max, _ = container.ParseDuration(t.Lifetime.Max)
	if p.def == 0 {
		p.def = p.max
	}
	return p
}

// lifetimeAt is the lifetime of an instance of t created (or started) at
// now, for a create that asks for requested ("" for the default): its
// expires_at and what it keeps; nil, nil for an instance that lives until
// someone stops it. A request past the max is a ValidationError naming it.
func (m *Manager) lifetimeAt(t container.Template, requested string, now time.Time) (*time.Time, *container.InstanceLifetime, error) {
	p := m.policyOf(t)
	d := p.def
	if requested != "" {
		r, err := container.ParseDuration(requested)
		if err != nil {
			return nil, nil, &ValidationError{Fields: []FieldError{{Field: "lifetime", Message: err.Error()}}}
		}
		if p.max > 0 && r > p.max {
			return nil, nil, &ValidationError{Fields: []FieldError{{Field: "lifetime",
				Message: fmt.Sprintf("%s is longer than the max lifetime %s of template %q", requested, p.max, t.Name)}}}
		}
		d = r
	}
	if d == 0 {
		return nil, nil, nil
	}
	return renewed(p, d, now)
}

// renewed is a lifetime of d from now under p.
func renewed(p lifetimePolicy, d time.Duration, now time.Time) (*time.Time, *container.InstanceLifetime, error) {
	exp := now.Add(d)
	lt := &container.InstanceLifetime{OnExpiry: p.onExpiry, Default: d.String()}
	if p.max > 0 {
		capAt := now.Add(p.max)
		lt.Max, lt.MaxExpiresAt = p.max.String(), &capAt
	}
	return &exp, lt, nil
}

// restartLifetime is the lifetime a start gives inst: a new one of its
// default length from now, under the same max, so that a start after an
// expiry is not stopped again at once. Nil for an instance without one.
func restartLifetime(inst container.Instance, now time.Time) (*time.Time, *container.InstanceLifetime) {
	lt := inst.Lifetime
	if lt == nil {
		return nil, nil
	}
	p := lifetimePolicy{onExpiry: lt.OnExpiry}
	p.def, _ = time.ParseDuration(lt.Default)
	p.max, _ = time.ParseDuration(lt.Max)
	if p.def <= 0 {
		return inst.ExpiresAt, lt
	}
	exp, out, _ := renewed(p, p.def, now)
	return exp, out
}

// restartWith makes the start p of inst give it a new lifetime
// (restartLifetime) in the same write.
func restartWith(p *store.TransitionParams, inst container.Instance, now time.Time) {
	if inst.Lifetime == nil {
		return
	}
	exp, lt := restartLifetime(inst, now)
	prev := p.Update
	p.Update = func(i *container.Instance) {
		if prev != nil {
			prev(i)
		}
		i.ExpiresAt, i.Lifetime = exp, lt
	}
}
