package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/berth-io/berth/docs"
)

// OpenAPIPath is where the handler serves the OpenAPI document, to anyone:
// a client generator or API Gateway import needs no token.
const OpenAPIPath = "/api/openapi.json"

// openAPIDoc is docs/openapi.yaml as JSON with its ETag, converted once:
// the document is compiled in, and a test loads it, so a failure here is a
// build defect, never a runtime condition.
var openAPIDoc = mustOpenAPIJSON(docs.OpenAPIYAML)

type openAPIJSON struct {
	body []byte
	etag string
}

func mustOpenAPIJSON(y []byte) openAPIJSON {
	b, err := OpenAPIJSON(y)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return openAPIJSON{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// OpenAPIJSON converts an OpenAPI document from YAML to JSON. Every mapping
// key must be a string (quote status codes: '200').
func OpenAPIJSON(y []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("converting the OpenAPI document to JSON: %w", err)
	}
	return b, nil
}

func (h *handler) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", openAPIDoc.etag)
	w.Header().Set("Cache-Control", "public, max-age=300")
	if etagMatches(r.Header.Get("If-None-Match"), openAPIDoc.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc.body)
}

// etagMatches reads If-None-Match: a list of ETags (weak ones compare
// weakly, as RFC 9110 says for GET) or "*".
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
