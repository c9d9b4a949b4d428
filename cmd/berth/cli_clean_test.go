package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCLICleanWriter: a container's output reaches the terminal with its
// control characters as ?, its tabs and newlines kept, and a UTF-8
// character split between writes whole.
func TestCLICleanWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"plain", []string{"hello\n", "world\n"}, "hello\nworld\n"},
		{"escape sequences", []string{"\x1b[31mred\x1b[0m\n"}, "?[31mred?[0m\n"},
		{"title and bell", []string{"\x1b]0;pwned\x07ok\n"}, "?]0;pwned?ok\n"},
		{"NUL and DEL", []string{"a\x00b\x7fc\n"}, "a?b?c\n"},
		{"tabs and newlines kept", []string{"a\tb\n\nc\n"}, "a\tb\n\nc\n"},
		{"carriage return", []string{"50%\r100%\n"}, "50%?100%\n"},
		{"C1 control", []string{"\u009b2J\n"}, "?2J\n"},
		{"lone 8-bit CSI byte", []string{"\x9b2J\n"}, "\uFFFD2J\n"},
		{"character split between writes", []string{"caf\xc3", "\xa9 \xe2\x9c", "\x93\n"}, "café ✓\n"},
		{"4-byte character in three writes", []string{"\xf0\x9f", "\x98", "\x80\n"}, "😀\n"},
		{"unfinished at the end", []string{"ok\xe2\x9c"}, "ok\uFFFD\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := &cliCleanWriter{w: &out}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("wrote %q; want %q", out.String(), tc.want)
			}
		})
	}
}

// TestCLILogsSanitized: `containers logs` cleans what the container
// printed by default, as `containers events` cleans its text, and
// --raw prints it byte for byte.
func TestCLILogsSanitized(t *testing.T) {
	const printed = "\x1b]0;pwned\x07hello\x00\tworld\r\n\x1b[2J"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/containers/c1/logs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(printed))
	}))
	defer srv.Close()
	env := map[string]string{"BERTH_URL": srv.URL, "BERTH_TOKEN": "t", "BERTH_RETRY_MAX_WAIT": "1ms"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"containers", "logs", "c1"}, "?]0;pwned?hello?\tworld?\n?[2J"},
		{[]string{"containers", "logs", "c1", "--raw"}, printed},
	} {
		r := runBerth(t, env, "", tc.args...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("berth %v: exit %d, stdout %q; want %q (stderr %s)", tc.args, r.code, r.stdout, tc.want, r.stderr)
		}
	}
	if got := cliClean("a\tb\nc\x1b"); got != "a b c?" {
		t.Errorf("cliClean (the events' rule) = %q", got)
	}
}
