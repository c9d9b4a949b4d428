package apicontract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// The document describes an NDJSON body as the list of its lines' objects:
// this decoder reads it so, one JSON value a line, for the schema check.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", ndjsonDecoder)
}

func ndjsonDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	out := []any{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: fmt.Errorf("NDJSON line %d is empty", n)}
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: fmt.Errorf("NDJSON line %d: %w", n, err)}
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}
	}
	return out, nil
}
