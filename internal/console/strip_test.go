package console_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/console"
)

// TestStripLineComments: only whole-line // comments go, each leaving its
// line break; code, strings and URLs with // in them stay as they are.
func TestStripLineComments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"// a\nconst x = 1;\n", "\nconst x = 1;\n"},
		{"  // indented\n\t// tab\nf();", "\n\nf();"},
		{`const u = "https://example.com"; // trailing stays` + "\n", `const u = "https://example.com"; // trailing stays` + "\n"},
		{"a();\n// last, no newline", "a();\n"},
		{"s = '//not a comment';\n", "s = '//not a comment';\n"},
		{"", ""},
	} {
		if got := string(console.StripLineComments([]byte(tc.in))); got != tc.want {
			t.Errorf("StripLineComments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestServedScriptIsTheSourceLessComments: the script served is the
// source with its comment lines emptied, line for line, and the source
// has no template literal across lines (where a // line would be text).
func TestServedScriptIsTheSourceLessComments(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("assets", "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Count(line, "`")%2 != 0 {
			t.Errorf("app.js:%d: a template literal across lines: %s", i+1, line)
		}
	}
	w := httptest.NewRecorder()
	console.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/console/app.js", nil))
	served := w.Body.Bytes()
	if w.Code != http.StatusOK || !bytes.Equal(served, console.StripLineComments(src)) {
		t.Fatalf("served app.js (%d, %d bytes) is not the source less its comment lines", w.Code, len(served))
	}
	if a, b := bytes.Count(served, []byte("\n")), bytes.Count(src, []byte("\n")); a != b {
		t.Errorf("served app.js has %d lines, the source %d", a, b)
	}
	if len(served) >= len(src) {
		t.Errorf("nothing stripped: %d bytes served of %d", len(served), len(src))
	}
}
