package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
)

// A service principal acts on behalf of a user with on_behalf_of (and
// on_behalf_of_team): a create's body fields, or query parameters of any
// request. The request is then the user's (owner, quota, what it sees)
// and the service is its actor (docs/api.md, "On behalf of").
const (
	paramOnBehalfOf     = "on_behalf_of"
	paramOnBehalfOfTeam = "on_behalf_of_team"
)

// actingFor is c acting on behalf of user (in team) when user is set, else
// c: a caller without the on_behalf_of claim is refused (403), a malformed
// user or team is a 400 naming the field.
func actingFor(c identity.Caller, user, team string) (identity.Caller, error) {
	if user == "" && team == "" {
		return c, nil
	}
	acting, err := c.For(user, team)
	var ne *identity.NameError
	switch {
	case errors.Is(err, identity.ErrCannotActFor):
		return c, fmt.Errorf("%s %q: %w", paramOnBehalfOf, user, errActForbidden)
	case errors.As(err, &ne):
		return c, &badRequest{msg: ne.Error(), fields: fieldErr(ne.Field, ne.Reason)}
	}
	return acting, err
}

// errActForbidden marks a refused on_behalf_of as the API's 403.
var errActForbidden = fmt.Errorf("only a principal with the on_behalf_of claim (auth.on_behalf_of_claim) may act for a user: %w", manager.ErrForbidden)

// actingForQuery applies the request's on_behalf_of query parameters.
func actingForQuery(r *http.Request, c identity.Caller) (identity.Caller, error) {
	q := r.URL.Query()
	if !q.Has(paramOnBehalfOf) && !q.Has(paramOnBehalfOfTeam) {
		return c, nil
	}
	if q.Get(paramOnBehalfOf) == "" {
		return c, &badRequest{msg: paramOnBehalfOf + " is required with " + paramOnBehalfOfTeam,
			fields: fieldErr(paramOnBehalfOf, "is required")}
	}
	return actingFor(c, q.Get(paramOnBehalfOf), q.Get(paramOnBehalfOfTeam))
}
