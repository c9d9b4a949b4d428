package emulate

import (
	"testing"

	"github.com/berth-io/berth/internal/samtemplate"
)

// TestFilter is Lambda event filtering as the mappings apply it.
func TestFilter(t *testing.T) {
	rec := map[string]any{"eventName": "INSERT", "dynamodb": map[string]any{
		"NewImage": map[string]any{"op": map[string]any{"S": "create"}, "n": map[string]any{"N": 5.0}}}}
	jsonRec := jsonValue(rec)
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{`{"eventName":["INSERT"]}`, true},
		{`{"eventName":["MODIFY","REMOVE"]}`, false},
		{`{"dynamodb":{"NewImage":{"op":{"S":["create"]}}}}`, true},
		{`{"dynamodb":{"NewImage":{"op":{"S":[{"prefix":"cr"}]}}}}`, true},
		{`{"dynamodb":{"NewImage":{"op":{"S":[{"anything-but":["create"]}]}}}}`, false},
		{`{"dynamodb":{"NewImage":{"gone":[{"exists":false}]}}}`, true},
		{`{"dynamodb":{"NewImage":{"op":[{"exists":false}]}}}`, false},
		{`{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":[">",3,"<=",5]}]}}}}`, true},
		{`{"eventName":[{"equals-ignore-case":"insert"}]}`, true},
		{`{"missing":["x"]}`, false},
	} {
		f, err := parseFilter([]string{tc.pattern})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.match(jsonRec); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.pattern, got, tc.want)
		}
	}
	if f, _ := parseFilter(nil); !f.match(jsonRec) {
		t.Error("no filter must pass everything")
	}
	if _, err := parseFilter([]string{`{"eventName":`}); err == nil {
		t.Error("a bad pattern must be an error")
	}
}

// TestRoutes: an HTTP API picks the most specific route, and path
// parameters come from the route's path.
func TestRoutes(t *testing.T) {
	fd := &frontDoor{routes: []*samtemplate.Route{
		{Name: "default", Method: "ANY", Path: "$default"},
		{Name: "proxy", Method: "ANY", Path: "/{proxy+}"},
		{Name: "get", Method: "GET", Path: "/api/containers/{id}"},
	}}
	for _, tc := range []struct{ method, path, want, param string }{
		{"GET", "/api/containers/abc", "get", "abc"},
		{"POST", "/api/containers/abc", "proxy", "api/containers/abc"},
		{"GET", "/", "default", ""},
	} {
		r, params := fd.route(tc.method, tc.path)
		if r == nil || r.Name != tc.want {
			t.Errorf("%s %s: route %+v, want %s", tc.method, tc.path, r, tc.want)
			continue
		}
		if got := params["id"] + params["proxy"]; got != tc.param {
			t.Errorf("%s %s: params %v", tc.method, tc.path, params)
		}
	}
}
