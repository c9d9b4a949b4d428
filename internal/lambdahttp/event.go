package lambdahttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Event is an HTTP API (payload 2.0) event that decodes whatever the JWT
// authorizer's claims hold. events.APIGatewayV2HTTPRequest has them as
// strings, but a claim can arrive as a JSON array, number or object, and
// decoding would then fail the whole invocation before the adapter could
// answer. Event keeps every other field as the events type decodes it,
// renders each claim as text, and remembers (rather than returns) an
// event that cannot be decoded, so that HandleEvent answers it with a 400.
type Event struct {
	events.APIGatewayV2HTTPRequest
	decodeErr error
}

// claimsField is where encoding/json reports a claim it cannot put in a
// string.
const claimsField = "requestContext.authorizer.jwt.claims"

// UnmarshalJSON decodes the event; it never fails.
func (e *Event) UnmarshalJSON(b []byte) error {
	*e = Event{}
	err := json.Unmarshal(b, &e.APIGatewayV2HTTPRequest)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Field, claimsField) {
		err = nil // the claims are decoded below; the rest was decoded as far as it goes
	}
	if err != nil {
		e.decodeErr = fmt.Errorf("the event is not an HTTP API 2.0 event: %w", err)
		return nil
	}
	var raw struct {
		RequestContext struct {
			Authorizer struct {
				JWT struct {
					Claims map[string]json.RawMessage `json:"claims"`
				} `json:"jwt"`
			} `json:"authorizer"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || raw.RequestContext.Authorizer.JWT.Claims == nil {
		return nil
	}
	claims := make(map[string]string, len(raw.RequestContext.Authorizer.JWT.Claims))
	for k, v := range raw.RequestContext.Authorizer.JWT.Claims {
		if k == "sub" {
			// The subject is a string (OpenID Connect Core 1.0, 2), and a
			// claim keeps its JSON type ("the string "42" and the number 42
			// stay distinct", API Gateway's JWT claims): a sub of another
			// type is no subject, rather than one that could be taken for
			// the user whose sub is its text. The request is then
			// unauthenticated (401).
			var sub string
			if json.Unmarshal(v, &sub) == nil {
				claims[k] = sub
			}
			continue
		}
		if text, ok := claimText(v); ok {
			claims[k] = text
		}
	}
	if az := e.RequestContext.Authorizer; az != nil && az.JWT != nil {
		az.JWT.Claims = claims
	}
	return nil
}

// claimText is a claim as a string: a string as is, null as absent, and
// anything else (an array of groups, a number such as auth_time) as its
// compact JSON text, which Groups reads as a list. The sub claim is the
// exception: only a string is a subject (see UnmarshalJSON).
func claimText(v json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	t := strings.TrimSpace(string(v))
	if t == "" || t == "null" {
		return "", false
	}
	return t, true
}

// HandleEvent is the Lambda handler: lambda.Start(adapter.HandleEvent). It
// answers every event, one that cannot be decoded with a 400 problem.
func (a *Adapter) HandleEvent(ctx context.Context, ev Event) (events.APIGatewayV2HTTPResponse, error) {
	if ev.decodeErr != nil {
		a.log.WarnContext(ctx, "undecodable API Gateway event", "error", ev.decodeErr)
		return problemResponse(http.StatusBadRequest, "Bad Request", ev.decodeErr.Error(), ev.RawPath), nil
	}
	return a.Handle(ctx, ev.APIGatewayV2HTTPRequest)
}
