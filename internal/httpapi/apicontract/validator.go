// Package apicontract checks HTTP exchanges against berth's OpenAPI document
// (docs/openapi.yaml) with kin-openapi's openapi3filter. Tests wrap the API
// handler (Handler) or a client's transport (Transport) in it, so that every
// request and response of every API test is checked: an undocumented
// status, header or body field fails the test that caused it.
//
// Only tests import this package: the validator is not linked into berth's
// binaries.
package apicontract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/berth-io/berth/docs"
)

// framingHeaders are set by HTTP itself or for every response alike, not by
// an operation: they need no entry in the document.
var framingHeaders = []string{"Cache-Control", "Connection", "Content-Length", "Content-Type", "Date", "Transfer-Encoding"}

// Validator checks requests and responses against the document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// Load parses and validates docs/openapi.yaml (its examples included).
func Load() (*Validator, error) {
	return LoadYAML(docs.OpenAPIYAML)
}

// LoadYAML is Load for another document (the tests of this package).
func LoadYAML(y []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(y)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the OpenAPI document: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// Doc is the loaded document.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// Exchange is one request and the response it got.
type Exchange struct {
	Request     *http.Request
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Check reports how an exchange departs from the document. A request the
// document does not allow must be refused with a 4xx (the server may be
// more lenient in what it refuses, never in what it accepts); a response
// must be documented for its operation: status, every header and the body.
// A path or method the document does not list must be answered 404 or 405
// as its components say.
func (v *Validator) Check(ctx context.Context, x Exchange) error {
	req := x.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	if len(x.RequestBody) > 0 {
		// The server reads every body as JSON whatever its Content-Type (the
		// document says so in prose): check it as what the server reads.
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return v.checkUnrouted(x, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		// readOnly fields (a template's version) are what a client SHOULD NOT
		// send, not MUST NOT: the server ignores them, so that a template read
		// with GET can be written back as it is.
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true,
			ExcludeReadOnlyValidations: true}}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && (x.Status < 400 || x.Status >= 500) {
		return fmt.Errorf("the document refuses this request, yet it was answered %d: %w", x.Status, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: x.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(x.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response %d: %w", x.Status, err)
	}
	resp := route.Operation.Responses.Status(x.Status)
	if resp == nil || resp.Value == nil {
		// ValidateResponse skips some statuses (304); still, each must be documented.
		return fmt.Errorf("status %d is not documented for %s %s", x.Status, route.Method, route.Path)
	}
	return checkResponse(resp.Value, x)
}

// checkUnrouted checks the answer to a request outside the document.
func (v *Validator) checkUnrouted(x Exchange, routeErr error) error {
	var name string
	var re *routers.RouteError
	reason := ""
	if errors.As(routeErr, &re) {
		reason = re.Reason
	}
	switch {
	case x.Status == http.StatusBadRequest:
		// A malformed query is refused before any routing.
		name = "BadRequest"
	case reason == routers.ErrPathNotFound.Error() && x.Status == http.StatusNotFound:
		name = "NotFound"
	case reason == routers.ErrMethodNotAllowed.Error() && x.Status == http.StatusMethodNotAllowed:
		name = "MethodNotAllowed"
		if got, want := allowed(x.Header.Get("Allow")), v.methods(x.Request); !slices.Equal(got, want) {
			return fmt.Errorf("405 with Allow %v, but the document lists %v for this path", got, want)
		}
	default:
		return fmt.Errorf("%s %s is not in the document (%w), yet it was answered %d", x.Request.Method, x.Request.URL.Path, routeErr, x.Status)
	}
	ref := v.doc.Components.Responses[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the document has no components.responses.%s", name)
	}
	for h, hr := range ref.Value.Headers {
		if hr.Value.Required && x.Header.Get(h) == "" {
			return fmt.Errorf("%d without its required header %s", x.Status, h)
		}
	}
	return checkResponse(ref.Value, x)
}

// methods lists the methods the document has for r's path.
func (v *Validator) methods(r *http.Request) []string {
	var out []string
	for _, m := range []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, _, err := v.router.FindRoute(probe); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func allowed(header string) []string {
	var out []string
	for _, m := range strings.Split(header, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// checkResponse checks what openapi3filter does not: that the response
// has no header the document does not name, and that its body is of a
// documented media type, validated against the schema when
// openapi3filter did not (the unrouted answers).
func checkResponse(r *openapi3.Response, x Exchange) error {
	for h := range x.Header {
		h = http.CanonicalHeaderKey(h)
		if slices.Contains(framingHeaders, h) {
			continue
		}
		if !slices.ContainsFunc(keys(r.Headers), func(d string) bool { return http.CanonicalHeaderKey(d) == h }) {
			return fmt.Errorf("response %d has header %s, which the document does not name for it", x.Status, h)
		}
	}
	if x.Request.Method == http.MethodHead {
		return nil // whatever the handler wrote, HTTP sends no body
	}
	if len(r.Content) == 0 {
		if len(bytes.TrimSpace(x.Body)) > 0 {
			return fmt.Errorf("response %d has a body, which the document does not describe", x.Status)
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(x.Header.Get("Content-Type"))
	media := r.Content.Get(mt)
	if media == nil {
		return fmt.Errorf("response %d has Content-Type %q, which the document does not list", x.Status, mt)
	}
	if media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	if !strings.HasSuffix(mt, "json") || mt == "application/x-ndjson" {
		// Text and NDJSON (logs) are routed answers only, which
		// openapi3filter has checked through their body decoders.
		return nil
	}
	var body any
	if err := json.Unmarshal(x.Body, &body); err != nil {
		return fmt.Errorf("response %d: body is not JSON: %w", x.Status, err)
	}
	if err := media.Schema.Value.VisitJSON(body, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("response %d: body does not match the schema: %w", x.Status, err)
	}
	return nil
}

func keys(h openapi3.Headers) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	return out
}

// describe names an exchange in a failure message.
func describe(x Exchange) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s → %d: %s", x.Request.Method, x.Request.URL.RequestURI(), x.Status, truncate(x.Body, 400)))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
