// Package identity carries the authenticated caller through a request.
// There is no anonymous caller: code that needs one and finds none refuses.
package identity

import "context"

// Caller is who makes a request: a user id (the JWT sub claim, or a local
// token's user), whether they are an admin, and their team (the JWT claim
// auth.team_claim names, or a local token's team; empty: none), whose
// quota covers its members together.
type Caller struct {
	User  string
	Admin bool
	Team  string
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context { return context.WithValue(ctx, key{}, c) }

// From returns the caller in ctx, if any.
func From(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(key{}).(Caller)
	return c, ok && c.User != ""
}

// CanSee reports whether c may see (and act on) something owned by owner.
func (c Caller) CanSee(owner string) bool { return c.Admin || c.User == owner }
