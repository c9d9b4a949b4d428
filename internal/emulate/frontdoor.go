package emulate

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/samtemplate"
)

// API Gateway HTTP API limits the front door keeps.
const (
	// MaxPayload is the largest request body (10 MB).
	MaxPayload = 10 << 20
	// IntegrationTimeout is the longest an HTTP API waits for its Lambda.
	IntegrationTimeout = 30 * time.Second
)

// LocalUser is the subject of every request when BERTH_CONFIG has no
// auth.tokens, as `berth serve` does it.
const LocalUser = "local"

// frontDoor is the HTTP API: each request becomes a payload 2.0 event for
// the function its route names, stage $default, with the JWT authorizer's
// claims taken from the bearer token through auth.tokens. A missing or
// unknown token is 401 {"message":"Unauthorized"}, as API Gateway's JWT
// authorizer answers, before any function runs.
type frontDoor struct {
	routes []*samtemplate.Route
	fns    map[string]*Function
	auth   config.Auth
	region string
	apiID  string
	log    *slog.Logger
}

// route returns the route a request takes: an exact "METHOD /path" first,
// then a greedy {proxy+} path, then $default.
func (fd *frontDoor) route(method, path string) (*samtemplate.Route, map[string]string) {
	var best *samtemplate.Route
	var bestParams map[string]string
	bestRank := 0
	for _, r := range fd.routes {
		if r.Method != "ANY" && r.Method != method && r.Path != "$default" {
			continue
		}
		rank, params := 0, map[string]string(nil)
		switch {
		case r.Path == "$default":
			rank = 1
		default:
			ok := false
			if params, ok = matchPath(r.Path, path); !ok {
				continue
			}
			rank = 2
			if !strings.Contains(r.Path, "+}") {
				rank = 3
			}
			if r.Method != "ANY" {
				rank++
			}
		}
		if rank > bestRank {
			best, bestParams, bestRank = r, params, rank
		}
	}
	return best, bestParams
}

// matchPath matches an HTTP API route path ("/api/{id}", "/{proxy+}").
func matchPath(pattern, path string) (map[string]string, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	params := map[string]string{}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "+}") {
			if i >= len(xs) || xs[i] == "" {
				return nil, false
			}
			params[p[1:len(p)-2]] = strings.Join(xs[i:], "/")
			return params, true
		}
		if i >= len(xs) {
			return nil, false
		}
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			params[p[1:len(p)-1]] = xs[i]
			continue
		}
		if p != xs[i] {
			return nil, false
		}
	}
	return params, len(ps) == len(xs)
}

// gatewayError writes one of API Gateway's own answers.
func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Apigw-Requestid", requestID())
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message":%q}`+"\n", msg)
}

// claims returns the JWT claims the bearer token stands for; ok=false
// when the request is not authorized.
func (fd *frontDoor) claims(r *http.Request) (map[string]string, bool) {
	now := time.Now().Unix()
	base := func(user string, admin bool, team string, actFor bool) map[string]string {
		c := map[string]string{"sub": user, "username": user, "token_use": "access", "scope": "berth/api",
			"iss": "https://berth-emulate.invalid", "client_id": "berth-emulate",
			"iat": strconv.FormatInt(now, 10), "exp": strconv.FormatInt(now+3600, 10)}
		if admin {
			// API Gateway writes a list claim as "[a b]".
			c[fd.adminClaim()] = "[" + fd.auth.AdminGroup + "]"
		}
		// The token's team and on_behalf_of as the claims auth names, as an
		// identity provider's token would carry them.
		if team != "" && fd.auth.TeamClaim != "" {
			c[fd.auth.TeamClaim] = team
		}
		if actFor && fd.auth.OnBehalfOfClaim != "" {
			c[fd.auth.OnBehalfOfClaim] = "true"
		}
		return c
	}
	if len(fd.auth.Tokens) == 0 {
		return base(LocalUser, true, "", false), true
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	t, ok := fd.auth.Tokens.Lookup(strings.TrimSpace(token))
	if !ok {
		return nil, false
	}
	return base(t.User, t.Admin, t.Team, t.OnBehalfOf), true
}

func (fd *frontDoor) adminClaim() string {
	if fd.auth.AdminClaim != "" {
		return fd.auth.AdminClaim
	}
	return config.DefaultAdminClaim
}

func (fd *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, params := fd.route(r.Method, r.URL.Path)
	if route == nil {
		gatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	var claims map[string]string
	if route.Authorized {
		var ok bool
		if claims, ok = fd.claims(r); !ok {
			w.Header().Set("Www-Authenticate", "Bearer")
			gatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > MaxPayload {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := fd.event(r, route, params, claims, body)
	fd.serve(r.Context(), w, route, ev)
}

// serve invokes the route's function and writes its response as API
// Gateway maps a payload 2.0 response.
func (fd *frontDoor) serve(ctx context.Context, w http.ResponseWriter, route *samtemplate.Route, ev events.APIGatewayV2HTTPRequest) {
	fn := fd.fns[route.Function]
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	timeout := IntegrationTimeout
	if route.Timeout > 0 {
		timeout = route.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := fn.Acquire(ctx); err != nil {
		gatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	inv := fn.Invoke(ctx, payload)
	fn.Release()
	switch inv.Result {
	case ResultOK:
	case ResultTimeout:
		gatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	default:
		if ctx.Err() != nil {
			gatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
			return
		}
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(inv.Payload, &resp); err != nil || resp.StatusCode == 0 {
		// Payload 2.0 without a statusCode: the result is the JSON body.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.Payload)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.Header().Set("Apigw-Requestid", ev.RequestContext.RequestID)
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// event builds the payload 2.0 event API Gateway sends for r.
func (fd *frontDoor) event(r *http.Request, route *samtemplate.Route, params map[string]string, claims map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	host := r.Host
	headers["host"] = host
	if _, ok := headers["x-amzn-trace-id"]; !ok {
		headers["x-amzn-trace-id"] = traceID(now)
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "http"
	if _, port, err := net.SplitHostPort(host); err == nil {
		headers["x-forwarded-port"] = port
	}
	if len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	routeKey := "$default"
	if route.Path != "$default" {
		routeKey = route.Method + " " + route.Path
	}
	if len(params) == 0 {
		params = nil
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: routeKey, AccountID: samtemplate.DefaultAccountID, Stage: "$default", RequestID: requestID(),
			APIID: fd.apiID, DomainName: host, DomainPrefix: strings.SplitN(host, ".", 2)[0],
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
		},
	}
	if claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: []string{"berth/api"}},
		}
	}
	if len(body) > 0 {
		if textual(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// textual reports whether API Gateway passes a body of this content type
// as text (else it is base64-encoded).
func textual(ct string) bool {
	ct = strings.ToLower(ct)
	if ct == "" || strings.HasPrefix(ct, "text/") {
		return true
	}
	for _, s := range []string{"json", "xml", "javascript", "x-www-form-urlencoded", "yaml"} {
		if strings.Contains(ct, s) {
			return true
		}
	}
	return false
}

func requestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return strings.TrimRight(base64.StdEncoding.EncodeToString(b[:]), "=") + "="
}

// traceID is an X-Amzn-Trace-Id root, as API Gateway adds one.
func traceID(now time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s", now.Unix(), hex.EncodeToString(b[:]))
}
