package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// The HTTP API on the bolt store, as `berth serve` builds it without its
// runtimes: a manager, bearer tokens to tell who calls, and the handler,
// serving an admin's template and a user's create.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := boltstore.Open(filepath.Join(dir, "berth.db"), boltstore.Options{})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := httpapi.New(httpapi.Options{
		Manager: manager.New(manager.Options{Store: st, Logger: quiet}),
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: "admin-token", User: "root", Admin: true},
			{Token: "alice-token", User: "alice"},
		}),
		Logger: quiet,
	})
	call := func(method, path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	rec := call(http.MethodPut, "/api/templates/sleeper", "admin-token",
		`{"runtime":"docker","image":"busybox:1","command":["sleep","3600"]}`)
	fmt.Println("PUT template:", rec.Code)
	rec = call(http.MethodPost, "/api/containers", "alice-token", `{"template":"sleeper"}`)
	var created struct {
		Owner  string `json:"owner"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
		panic(err)
	}
	fmt.Println("POST container:", rec.Code, created.Owner, created.Status)
	rec = call(http.MethodGet, "/api/containers", "", "")
	fmt.Println("without a token:", rec.Code)
	// Output:
	// PUT template: 201
	// POST container: 202 alice pending
	// without a token: 401
}
