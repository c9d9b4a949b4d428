// Package lambdahttp serves an http.Handler behind API Gateway HTTP APIs
// (payload format 2.0) on AWS Lambda: an event becomes an *http.Request,
// the handler's response becomes the Lambda response.
//
// It is a small stdlib adapter rather than aws-lambda-go-api-proxy: berth
// needs one event shape (v2 HTTP) and one extra step (the JWT authorizer's
// claims become the caller in the request context), and the proxy's module
// brings adapters for every web framework it supports.
//
// Handle never returns an error: an event that cannot be turned into a
// request is a 400 problem response, a panic outside the handler's own
// recovery a 500, so API Gateway always passes on a proper answer.
package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/identity"
)

// Defaults of Options.AdminClaim and Options.AdminGroup: those of config's
// auth.admin_claim and auth.admin_group, kept in config with the keys.
const (
	DefaultAdminClaim = config.DefaultAdminClaim
	DefaultAdminGroup = config.DefaultAdminGroup
)

// RequestIDHeader is where API Gateway's request id is passed to the
// handler (httpapi keeps a well-formed incoming id as the request's own).
const RequestIDHeader = "X-Request-Id"

// Options configure an Adapter.
type Options struct {
	// AdminClaim is the JWT claim listing the caller's groups.
	AdminClaim string
	// AdminGroup is the group in AdminClaim that makes a caller an admin.
	AdminGroup string
	// TeamClaim is the JWT claim naming the caller's team (auth.team_claim);
	// empty: callers have no team.
	TeamClaim string
	// OnBehalfOfClaim is the JWT claim that, "true", lets a service act
	// on behalf of users (auth.on_behalf_of_claim); empty: none may.
	OnBehalfOfClaim string
	// Logger receives the adapter's own errors; nil means slog.Default.
	Logger *slog.Logger
}

// AuthOptions are the Options a function's `auth:` section gives (its
// claims), with logger: every function serving the API reads the caller
// the same way.
func AuthOptions(a config.Auth, logger *slog.Logger) Options {
	return Options{AdminClaim: a.AdminClaim, AdminGroup: a.AdminGroup, TeamClaim: a.TeamClaim,
		OnBehalfOfClaim: a.OnBehalfOfClaim, Logger: logger}
}

// Adapter serves an http.Handler to API Gateway HTTP API events.
type Adapter struct {
	h           http.Handler
	adminClaim  string
	adminGroup  string
	teamClaim   string
	actForClaim string
	log         *slog.Logger
}

// New returns an Adapter around h.
func New(h http.Handler, o Options) *Adapter {
	a := &Adapter{h: h, adminClaim: o.AdminClaim, adminGroup: o.AdminGroup, teamClaim: o.TeamClaim, actForClaim: o.OnBehalfOfClaim, log: o.Logger}
	if a.adminClaim == "" {
		a.adminClaim = DefaultAdminClaim
	}
	if a.adminGroup == "" {
		a.adminGroup = DefaultAdminGroup
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a
}

// Handle serves one decoded event; HandleEvent, which decodes claims
// tolerantly, is what lambda.Start gets.
func (a *Adapter) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	defer func() {
		if p := recover(); p != nil {
			a.log.ErrorContext(ctx, "panic serving API Gateway event", "request_id", ev.RequestContext.RequestID, "panic", p)
			resp = problemResponse(http.StatusInternalServerError, "Internal Server Error",
				"request "+ev.RequestContext.RequestID+" failed", ev.RawPath)
		}
	}()
	req, err := a.Request(ctx, ev)
	if err != nil {
		a.log.WarnContext(ctx, "malformed API Gateway event", "request_id", ev.RequestContext.RequestID, "error", err)
		return problemResponse(http.StatusBadRequest, "Bad Request", err.Error(), ev.RawPath), nil
	}
	w := newResponseWriter()
	a.h.ServeHTTP(w, req)
	resp = w.response(req.Method)
	if base, _ := stagePrefix(ev); base != "" {
		withBasePath(&resp, base)
	}
	return resp, nil
}

// Request rebuilds the HTTP request API Gateway received, with the caller
// from the JWT authorizer's claims in its context (identity.With) when the
// claims name a subject.
func (a *Adapter) Request(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return nil, fmt.Errorf("the event has no requestContext.http.method")
	}
	if !isToken(method) {
		return nil, fmt.Errorf("invalid method %q", method)
	}
	_, raw := stagePrefix(ev)
	u, err := requestURL(raw, ev.RawQueryString)
	if err != nil {
		return nil, err
	}
	var body []byte
	if ev.IsBase64Encoded {
		body, err = base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("body is not valid base64: %w", err)
		}
	} else {
		body = []byte(ev.Body)
	}

	if c, ok := CallerFromClaims(claims(ev), a.adminClaim, a.adminGroup); ok {
		c.Team = TeamFromClaims(claims(ev), a.teamClaim)
		c.MayActFor = a.actForClaim != "" && claims(ev)[a.actForClaim] == "true"
		ctx = identity.With(ctx, c)
	} else if sub, present := claims(ev)["sub"]; present {
		a.log.WarnContext(ctx, "ignoring an invalid sub claim; the request is unauthenticated",
			"request_id", ev.RequestContext.RequestID, "sub_bytes", len(sub))
	}
	req, err := http.NewRequestWithContext(ctx, method, "/", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.URL = u // as received, not re-parsed
	req.RequestURI = u.RequestURI()
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/1.1", 1, 1
	if p := ev.RequestContext.HTTP.Protocol; p != "" {
		if major, minor, ok := http.ParseHTTPVersion(p); ok {
			req.Proto, req.ProtoMajor, req.ProtoMinor = p, major, minor
		}
	}
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	req.Header = make(http.Header, len(ev.Headers)+2)
	for k, v := range ev.Headers {
		// API Gateway lowercases names and joins repeated headers with
		// commas, which is the same value for list-valued headers.
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(ev.Cookies) > 0 {
		// Payload 2.0 moves the Cookie header into cookies.
		req.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	if id := ev.RequestContext.RequestID; id != "" {
		req.Header.Set(RequestIDHeader, id)
	}
	req.Host = req.Header.Get("Host")
	if req.Host == "" {
		req.Host = ev.RequestContext.DomainName
	}
	req.Header.Del("Host") // net/http keeps it in req.Host only
	if ip := ev.RequestContext.HTTP.SourceIP; ip != "" {
		req.RemoteAddr = ip
	}
	return req, nil
}

// stagePrefix splits the path the client sent (rawPath, or
// requestContext.http.path, still encoded) into the named stage's prefix
// and the path the handler routes. Through the API's own endpoint
// ({api-id}.execute-api.{region}.amazonaws.com) a named stage is the first
// segment of rawPath (/prod/api/containers) while the routes start at /api,
// so the prefix is taken off, and put back on what the response points the
// client to (withBasePath). Through a custom domain the API mapping has
// already taken its own path off and rawPath starts at the route: nothing
// is taken off, so a stage named "api" does not eat the route's own /api.
// $default has no prefix. An event without a domain name (a test's, an
// emulator's) is taken as the API's own endpoint.
func stagePrefix(ev events.APIGatewayV2HTTPRequest) (base, path string) {
	raw := ev.RawPath
	if raw == "" {
		raw = ev.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(raw, "/") {
		raw = "/" + raw
	}
	stage, domain := ev.RequestContext.Stage, ev.RequestContext.DomainName
	if stage == "" || stage == "$default" || (domain != "" && !isExecuteAPIDomain(domain)) {
		return "", raw
	}
	if rest, ok := strings.CutPrefix(raw, "/"+stage); ok && (rest == "" || rest[0] == '/') {
		return "/" + stage, rest
	}
	return "", raw
}

// isExecuteAPIDomain reports whether host is an API's own endpoint
// ({api-id}.execute-api.{region}.amazonaws.com, .com.cn in China) rather
// than a custom domain name.
func isExecuteAPIDomain(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return strings.Contains(host, ".execute-api.") &&
		(strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn"))
}

// withBasePath puts a stage's prefix back on what a response points the
// client to: a Location header and a problem's instance that are paths
// from the API's root.
func withBasePath(resp *events.APIGatewayV2HTTPResponse, base string) {
	rooted := func(p string) bool { return strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") }
	if loc, ok := resp.Headers["Location"]; ok && rooted(loc) {
		resp.Headers["Location"] = base + loc
	}
	if resp.IsBase64Encoded || !strings.HasPrefix(resp.Headers["Content-Type"], "application/problem+json") {
		return
	}
	var problem map[string]json.RawMessage
	if json.Unmarshal([]byte(resp.Body), &problem) != nil {
		return
	}
	var instance string
	if json.Unmarshal(problem["instance"], &instance) != nil || !rooted(instance) {
		return
	}
	problem["instance"], _ = json.Marshal(base + instance)
	if body, err := json.Marshal(problem); err == nil {
		resp.Body = string(body) + "\n"
	}
}

// requestURL is the path the handler routes (still encoded) and the
// client's rawQueryString as a URL.
func requestURL(raw, query string) (*url.URL, error) {
	if raw == "" {
		raw = "/"
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid path %q: %w", raw, err)
	}
	u := &url.URL{Path: p, RawQuery: query}
	if u.EscapedPath() != raw {
		u.RawPath = raw
	}
	return u, nil
}

func claims(ev events.APIGatewayV2HTTPRequest) map[string]string {
	if az := ev.RequestContext.Authorizer; az != nil && az.JWT != nil {
		return az.JWT.Claims
	}
	return nil
}

// CallerFromClaims returns the caller a JWT authorizer's claims describe:
// the user is the sub claim, an admin is a member of adminGroup in the
// adminClaim claim. ok=false when there is no usable subject (the handler
// then answers 401: there is no anonymous caller): none, or one that is
// not a valid OpenID Connect subject (at most 255 characters, RFC 20's
// printable ones only), which also keeps owner keys far inside DynamoDB's
// 2048-byte key limit.
func CallerFromClaims(claims map[string]string, adminClaim, adminGroup string) (identity.Caller, bool) {
	sub := claims["sub"]
	if !validSubject(sub) {
		return identity.Caller{}, false
	}
	c := identity.Caller{User: sub}
	if adminGroup != "" {
		for _, g := range Groups(claims[adminClaim]) {
			if g == adminGroup {
				c.Admin = true
				break
			}
		}
	}
	return c, true
}

// TeamFromClaims returns the team the teamClaim claim names: "" when
// teamClaim is empty, the claim is absent, or its value is not a valid
// name (the rules of a subject, as it keys the team's quota).
func TeamFromClaims(claims map[string]string, teamClaim string) string {
	if teamClaim == "" {
		return ""
	}
	if team := claims[teamClaim]; validSubject(team) {
		return team
	}
	return ""
}

// MaxSubject is the longest sub claim accepted (OpenID Connect Core 1.0,
// section 2: "It MUST NOT exceed 255 ASCII characters in length").
const MaxSubject = 255

// validSubject reports whether sub is 1..MaxSubject printable ASCII
// characters without leading or trailing spaces.
func validSubject(sub string) bool {
	if sub == "" || len(sub) > MaxSubject || sub[0] == ' ' || sub[len(sub)-1] == ' ' {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] < 0x20 || sub[i] > 0x7e {
			return false
		}
	}
	return true
}

// Groups splits a groups claim as API Gateway passes it on.
//
//   - An HTTP API's JWT authorizer flattens an array claim to one string:
//     its elements, unquoted and unescaped, between brackets and separated
//     by single spaces: ["ops", "berth-admin"] arrives as `[ops berth-admin]`.
//     The elements are split on white space only: a comma belongs to a
//     group's name, so `[x,berth-admin other]` is the groups "x,berth-admin"
//     and "other", not berth-admin.
//   - A claim that arrives with its JSON type (Event keeps it as its JSON
//     text, as a REST API's JWT authorizer sends it) is a JSON array:
//     `["ops","berth-admin"]`; an element that is not a string is its JSON
//     text.
//   - A claim that was a string in the token is the identity provider's own
//     list, comma or space separated.
func Groups(claim string) []string {
	s := strings.TrimSpace(claim)
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		var list []json.RawMessage
		if json.Unmarshal([]byte(s), &list) == nil {
			out := make([]string, 0, len(list))
			for _, e := range list {
				if text, ok := claimText(e); ok && text != "" {
					out = append(out, text)
				}
			}
			return out
		}
		return strings.Fields(s[1 : len(s)-1])
	}
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	out := fields[:0]
	for _, f := range fields {
		if f = strings.Trim(f, `"'`); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// isToken reports whether s is an RFC 9110 token (a valid method).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

// responseWriter collects the handler's response in memory.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newResponseWriter() *responseWriter { return &responseWriter{header: make(http.Header)} }

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 || (code >= 100 && code < 200) {
		return // informational answers are not passed on by API Gateway
	}
	w.status = code
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(b)
}

// Flush is a no-op: Lambda sends the response when the handler returns.
func (w *responseWriter) Flush() {}

// response turns what the handler wrote into API Gateway's response shape:
// repeated headers joined with commas, Set-Cookie moved into cookies, the
// body base64 encoded unless it is UTF-8 text.
func (w *responseWriter) response(method string) events.APIGatewayV2HTTPResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.body.Bytes()
	if method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified {
		body = nil
	}
	if _, set := w.header["Content-Type"]; !set && len(body) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(body)) // as net/http's server does
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: make(map[string]string, len(w.header))}
	for k, vs := range w.header {
		if len(vs) == 0 {
			continue
		}
		if http.CanonicalHeaderKey(k) == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[http.CanonicalHeaderKey(k)] = strings.Join(vs, ", ")
	}
	if len(body) > 0 {
		if isText(w.header.Get("Content-Type")) && utf8.Valid(body) {
			resp.Body = string(body)
		} else {
			resp.Body = base64.StdEncoding.EncodeToString(body)
			resp.IsBase64Encoded = true
		}
	}
	return resp
}

// isText reports whether a body of this media type is text that may be
// passed as a JSON string.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/javascript",
		mt == "application/x-www-form-urlencoded", mt == "application/x-ndjson", mt == "image/svg+xml":
		return true
	}
	return false
}

// problemResponse is an RFC 9457 problem answered by the adapter itself.
func problemResponse(status int, title, detail, instance string) events.APIGatewayV2HTTPResponse {
	body, _ := json.Marshal(map[string]any{
		"type": "https://berth.dev/problems/" + strconv.Itoa(status), "title": title,
		"status": status, "detail": detail, "instance": instance,
	})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"},
		Body:       string(body) + "\n",
	}
}
