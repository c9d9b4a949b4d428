package dockersim

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an answer other than success: a status and the engine's
// message.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

func noSuchContainer(ref string) *apiError {
	return errorf(http.StatusNotFound, "No such container: %s", ref)
}

// writeError answers as the engine does: {"message": …} as JSON, which the
// client turns into an error of the status's kind.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// answer writes err or, when nil, status with no body.
func answer(w http.ResponseWriter, err *apiError, status int) {
	if err == nil {
		w.WriteHeader(status)
		return
	}
	writeError(w, err.status, err.msg)
}
