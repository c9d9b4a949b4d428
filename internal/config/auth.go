package config

import (
	"crypto/subtle"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Auth is the `auth:` section (api.md, Identity).
type Auth struct {
	// Tokens are the bearer tokens `berth serve` accepts. None means the
	// local server runs as a single local admin (and says so at start-up).
	Tokens Tokens `yaml:"tokens"`
	// AdminClaim is the JWT claim holding the caller's groups (API Gateway).
	// Defaults to DefaultAdminClaim.
	AdminClaim string `yaml:"admin_claim"`
	// AdminGroup is the group in AdminClaim that makes a caller an admin.
	// Defaults to DefaultAdminGroup.
	AdminGroup string `yaml:"admin_group"`
	// TeamClaim is the JWT claim naming the caller's team, whose quota
	// covers its members together. Empty, or absent from a token: no team.
	TeamClaim string `yaml:"team_claim"`
	// OnBehalfOfClaim is the JWT claim that, set to "true", lets a service
	// principal act on behalf of users (a create's on_behalf_of; api.md,
	// "On behalf of"). Empty, or not "true" in a token: it may not.
	OnBehalfOfClaim string `yaml:"on_behalf_of_claim"`
	// OIDCIssuer is the OpenID Connect issuer the web console signs in
	// with (authorization code flow with PKCE, in the browser): the stack's
	// Cognito pool or the configured JWT issuer on AWS. Empty: the console
	// asks for a token.
	OIDCIssuer string `yaml:"oidc_issuer"`
	// OIDCClientID is the console's client at OIDCIssuer: a public client
	// (no secret) whose callback URL is the console's (<base URL>/console).
	OIDCClientID string `yaml:"oidc_client_id"`
}

// Defaults of the `auth:` claims, which the Lambda adapter
// (lambdahttp.DefaultAdminClaim) and the emulator's front door fall back on
// too: Cognito's groups claim and the stack's admin group.
const (
	DefaultAdminClaim = "cognito:groups"
	DefaultAdminGroup = "berth-admin"
)

// Token is one local bearer token and the caller it stands for.
type Token struct {
	Token Secret
	User  string
	Admin bool
	// Team is the caller's team (quotas); empty: none.
	Team string
	// OnBehalfOf lets the token's caller act on behalf of users.
	OnBehalfOf bool
}

// Tokens are the local bearer tokens, in file order.
//
// The file writes them as a map, `tokens: {<token>: {user: alice, admin:
// false}}`, which is the form api.md documents. After loading they are a
// slice with the token in a Secret, because a map key cannot be kept from
// printing: fmt and slog would print every token of a logged config.
type Tokens []Token

// tokenEntry is the YAML value under a token.
type tokenEntry struct {
	User  string `yaml:"user"`
	Admin bool   `yaml:"admin"`
	Team  string `yaml:"team"`
	// OnBehalfOf: the caller may act on behalf of users.
	OnBehalfOf bool `yaml:"on_behalf_of"`
}

// UnmarshalYAML decodes the map form. Its errors are *yaml.TypeError so
// that decoding goes on and every problem is reported, and they never
// quote a token.
func (t *Tokens) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf(
			"line %d: auth.tokens: must be a map of token to {user, admin, team, on_behalf_of}", n.Line)}}
	}
	var errs []string
	out := make(Tokens, 0, len(n.Content)/2)
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		// Every entry is kept, even a wrong one, so that auth.tokens[i]
		// in an error message is the i-th entry of the file.
		k, v := n.Content[i], n.Content[i+1]
		var tok Token
		if k.Kind == yaml.ScalarNode {
			tok.Token = Secret(k.Value) // a non-scalar key stays empty: validation says so
			if first, dup := seen[k.Value]; dup {
				errs = append(errs, fmt.Sprintf("line %d: auth.tokens[%d]: same token as auth.tokens[%d]", k.Line, len(out), first))
			} else {
				seen[k.Value] = len(out)
			}
		}
		switch {
		case v.Kind == yaml.MappingNode:
			var e tokenEntry
			if err := decodeKnown(v, &e); err != nil {
				errs = append(errs, err.Errors...)
			}
			tok.User, tok.Admin, tok.Team, tok.OnBehalfOf = e.User, e.Admin, e.Team, e.OnBehalfOf
		case v.ShortTag() != "!!null":
			errs = append(errs, fmt.Sprintf("line %d: auth.tokens[%d]: want {user, admin, team, on_behalf_of}", v.Line, len(out)))
		}
		out = append(out, tok)
	}
	if len(out) == 0 {
		out = nil // `tokens: {}` is the same as no tokens
	}
	*t = out
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// decodeKnown decodes a token's value rejecting unknown keys, which
// yaml.Node.Decode alone would ignore.
func decodeKnown(v *yaml.Node, e *tokenEntry) *yaml.TypeError {
	var errs []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var err error
		switch k.Value {
		case "user":
			err = val.Decode(&e.User)
		case "admin":
			err = val.Decode(&e.Admin)
		case "team":
			err = val.Decode(&e.Team)
		case "on_behalf_of":
			err = val.Decode(&e.OnBehalfOf)
		default:
			errs = append(errs, fmt.Sprintf("line %d: field %s not found in type config.tokenEntry", k.Line, k.Value))
			continue
		}
		if te := (*yaml.TypeError)(nil); errors.As(err, &te) {
			errs = append(errs, te.Errors...)
		} else if err != nil {
			errs = append(errs, fmt.Sprintf("line %d: %v", val.Line, err))
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// Lookup returns the token matching bearer. Every configured token is
// compared in constant time, so the time taken says nothing about which
// token, or how much of one, matched.
func (t Tokens) Lookup(bearer string) (Token, bool) {
	var found Token
	ok := 0
	for _, tok := range t {
		if subtle.ConstantTimeCompare([]byte(tok.Token), []byte(bearer)) == 1 {
			found, ok = tok, 1
		}
	}
	return found, ok == 1 && bearer != ""
}
