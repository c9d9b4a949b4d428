// Package docs carries berth's OpenAPI document (openapi.yaml) into the
// binaries that serve it: GET /api/openapi.json of the local server and of
// the api function.
package docs

import _ "embed"

// OpenAPIYAML is docs/openapi.yaml, the HTTP API's contract.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
