package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/berth-io/berth/internal/identity"
)

// TokenUser is who a static bearer token stands for.
type TokenUser struct {
	Token string
	User  string
	Admin bool
	// Team is the caller's team (quotas); empty: none.
	Team string
	// OnBehalfOf lets the caller act on behalf of users (on_behalf_of).
	OnBehalfOf bool
}

// TokenAuth authenticates `Authorization: Bearer <token>` against the local
// server's configured tokens, comparing in constant time.
func TokenAuth(tokens []TokenUser) Authenticator {
	return func(r *http.Request) (identity.Caller, bool) {
		got, ok := bearer(r)
		if !ok {
			return identity.Caller{}, false
		}
		for _, t := range tokens {
			if subtle.ConstantTimeCompare([]byte(got), []byte(t.Token)) == 1 {
				return identity.Caller{User: t.User, Admin: t.Admin, Team: t.Team, MayActFor: t.OnBehalfOf}, true
			}
		}
		return identity.Caller{}, false
	}
}

// SingleUser serves every request as one admin: the local server with no
// tokens configured (it says so at start-up).
func SingleUser(user string) Authenticator {
	return func(*http.Request) (identity.Caller, bool) { return identity.Caller{User: user, Admin: true}, true }
}

// ContextAuth takes the caller an outer layer put in the request context
// (functions/api, from API Gateway's JWT authorizer claims).
func ContextAuth() Authenticator {
	return func(r *http.Request) (identity.Caller, bool) { return identity.From(r.Context()) }
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
