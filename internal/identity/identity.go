// Package identity carries the authenticated caller through a request.
// There is no anonymous caller: code that needs one and finds none refuses.
package identity

import "context"

// Caller is who makes a request: a user id (the JWT sub claim, or a local
// token's user) and whether they are an admin.
type Caller struct {
	User  string
	Admin bool
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
