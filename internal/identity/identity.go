// Package identity carries the authenticated caller through a request.
// There is no anonymous caller: code that needs one and finds none refuses.
package identity

import (
	"context"
	"errors"
	"fmt"
	"unicode"
)

// Caller is who makes a request: a user id (the JWT sub claim, or a local
// token's user), whether they are an admin, and their team (the JWT claim
// auth.team_claim names, or a local token's team; empty: none), whose
// quota covers its members together.
//
// A service principal that may act on behalf of users (MayActFor) acts
// for one through For: the caller it returns is the user's (their
// instances, quotas and visibility) and names the service as Service, the
// actor its events record.
type Caller struct {
	User  string
	Admin bool
	Team  string
	// MayActFor says the caller may act on behalf of users: its token
	// carries the claim auth.on_behalf_of_claim names (or a local token
	// says on_behalf_of: true).
	MayActFor bool
	// Service is the principal acting on behalf of User; empty when User
	// acts for themself.
	Service string
}

// MaxUserLen bounds the user and team an on_behalf_of names (an OpenID
// Connect sub is at most 255 characters).
const MaxUserLen = 255

// ErrCannotActFor is For's answer to a caller without MayActFor.
var ErrCannotActFor = errors.New("acting on behalf of a user needs the on_behalf_of claim")

// For returns the caller acting on behalf of user (in team; empty: none):
// the request is then user's and c is its actor. It refuses a caller that
// may not act for others (ErrCannotActFor) and a user or team that is not
// 1-255 printable characters. Acting for oneself is c itself.
func (c Caller) For(user, team string) (Caller, error) {
	if !c.MayActFor {
		return Caller{}, ErrCannotActFor
	}
	if err := checkName("on_behalf_of", user, true); err != nil {
		return Caller{}, err
	}
	if err := checkName("on_behalf_of_team", team, false); err != nil {
		return Caller{}, err
	}
	if user == c.User && team == c.Team {
		return c, nil
	}
	return Caller{User: user, Team: team, Service: c.User}, nil
}

// Actor is who acts in c's requests: the service acting on behalf of
// User, else User.
func (c Caller) Actor() string {
	if c.Service != "" {
		return c.Service
	}
	return c.User
}

// ActingFor is the user a service acts on behalf of; empty when the caller
// acts for themself.
func (c Caller) ActingFor() string {
	if c.Service == "" {
		return ""
	}
	return c.User
}

// NameError is For's refusal of a user or team it was given.
type NameError struct {
	Field, Reason string
}

func (e *NameError) Error() string { return e.Field + " " + e.Reason }

func checkName(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return &NameError{Field: field, Reason: "is required"}
	case len(s) > MaxUserLen:
		return &NameError{Field: field, Reason: fmt.Sprintf("must be at most %d bytes", MaxUserLen)}
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return &NameError{Field: field, Reason: "must be printable characters without spaces"}
		}
	}
	return nil
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
