package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/berth-io/berth/internal/container"
)

// storedResponse is how the first response to an idempotent create is
// kept (manager.Idempotency.Response): the store holds the bytes without
// reading them, so the HTTP details stay in this package.
type storedResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// firstResponse encodes the 202 a create answers with.
func firstResponse(in container.Instance) []byte {
	body, _ := json.Marshal(instanceBody(in))
	out, _ := json.Marshal(storedResponse{
		Status:  http.StatusAccepted,
		Headers: map[string]string{"Location": containerPath(in.ID), "ETag": etag(in.Version)},
		Body:    body,
	})
	return out
}

// replay writes a stored first response again, marked as a replay.
func replay(w http.ResponseWriter, stored []byte) error {
	var r storedResponse
	if err := json.Unmarshal(stored, &r); err != nil || r.Status == 0 {
		return fmt.Errorf("decoding the stored response of an idempotent request: %w", err)
	}
	for k, v := range r.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_, _ = w.Write(append(r.Body, '\n'))
	return nil
}
