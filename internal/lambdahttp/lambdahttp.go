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

	"github.com/berth-io/berth/internal/identity"
)

// Defaults of Options.AdminClaim and Options.AdminGroup (config auth.admin_claim
// and auth.admin_group).
const (
	DefaultAdminClaim = "cognito:groups"
	DefaultAdminGroup = "berth-admin"
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
	// Logger receives the adapter's own errors; nil means slog.Default.
	Logger *slog.Logger
}

// Adapter serves an http.Handler to API Gateway HTTP API events.
type Adapter struct {
	h          http.Handler
	adminClaim string
	adminGroup string
	log        *slog.Logger
}

// New returns an Adapter around h.
func New(h http.Handler, o Options) *Adapter {
	a := &Adapter{h: h, adminClaim: o.AdminClaim, adminGroup: o.AdminGroup, log: o.Logger}
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
	return w.response(req.Method), nil
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
	u, err := requestURL(ev)
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

// requestURL is the path and query string the client sent: rawPath (or
// requestContext.http.path) and rawQueryString, both still encoded, with a
// named stage taken off the front: HTTP API puts it in rawPath
// (/prod/api/containers) while the handler's routes start at /api.
func requestURL(ev events.APIGatewayV2HTTPRequest) (*url.URL, error) {
	raw := ev.RawPath
	if raw == "" {
		raw = ev.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(raw, "/") {
		raw = "/" + raw
	}
	if stage := ev.RequestContext.Stage; stage != "" && stage != "$default" {
		if rest, ok := strings.CutPrefix(raw, "/"+stage); ok && (rest == "" || rest[0] == '/') {
			raw = rest
		}
	}
	if raw == "" {
		raw = "/"
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid path %q: %w", raw, err)
	}
	u := &url.URL{Path: p, RawQuery: ev.RawQueryString}
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

// Groups splits a groups claim as API Gateway passes it on. A JWT array
// claim arrives flattened to a string: `[berth-admin other]` from the JWT
// authorizer, sometimes a JSON array `["berth-admin","other"]`, and a
// claim that was a string to begin with is a comma or space separated list.
func Groups(claim string) []string {
	s := strings.TrimSpace(claim)
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "[") {
		var list []string
		if json.Unmarshal([]byte(s), &list) == nil {
			return list
		}
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
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
