package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// decodeBody reads one JSON object into v: at most limit bytes (413 past
// it), unknown fields and trailing data refused (400).
func decodeBody(r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return badRequestf("reading request body: %v", err)
	}
	if int64(len(body)) > limit {
		return &tooLarge{limit: limit}
	}
	return decodeJSON(body, v)
}

// decodeJSON is decodeBody's parser, separate so that it can be fuzzed.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequestf("request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return badRequestf("malformed JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return &badRequest{msg: fmt.Sprintf("field %q must be %s", typ.Field, typ.Type),
				fields: fieldErr(typ.Field, "must be "+typ.Type.String())}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return &badRequest{msg: "unknown field " + strconv.Quote(name), fields: fieldErr(name, "unknown field")}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequestf("malformed JSON: unexpected end of input")
		}
		return badRequestf("malformed JSON: %v", err)
	}
	if dec.More() {
		return badRequestf("malformed JSON: data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequestf("malformed JSON: data after the object")
	}
	return nil
}
