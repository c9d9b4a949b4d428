package runtime

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/berth-io/berth/internal/container"
)

// TestLastWordsBounds: whatever a container printed, its last words hold
// its last lines within container.LastWordsMaxLines and LastWordsMaxBytes,
// as valid UTF-8, and say when they left something out.
func TestLastWordsBounds(t *testing.T) {
	out := func(text string) LogLine {
		return LogLine{Stream: LogStdout, Time: time.Now(), Text: []byte(text)}
	}
	numbered := func(n, size int) []LogLine {
		var ls []LogLine
		for i := 1; i <= n; i++ {
			ls = append(ls, out(fmt.Sprintf("%-*d", size, i)))
		}
		return ls
	}
	// A 100 KiB line in the pieces a runtime gives (MaxLogLine each).
	long := strings.Repeat("a", 50<<10) + strings.Repeat("é", 25<<10) // 100 KiB, ends in 2-byte runes
	var pieces []LogLine
	for rest := long; rest != ""; {
		n := min(len(rest), MaxLogLine)
		pieces = append(pieces, LogLine{Stream: LogStderr, Text: []byte(rest[:n]), Partial: n < len(rest)})
		rest = rest[n:]
	}
	tests := []struct {
		name      string
		lines     []LogLine
		wantNil   bool
		wantLines int
		wantFirst string // the first kept line's text, trimmed
		wantLast  string
		truncated bool
	}{
		{name: "nothing printed", wantNil: true},
		{name: "a few lines", lines: numbered(3, 0), wantLines: 3, wantFirst: "1", wantLast: "3"},
		{name: "exactly the bound", lines: numbered(container.LastWordsMaxLines, 0), wantLines: 100, wantFirst: "1", wantLast: "100"},
		{name: "one line over (the tail asks one more)", lines: numbered(container.LastWordsMaxLines+1, 0), wantLines: 100,
			wantFirst: "2", wantLast: "101", truncated: true},
		{name: "bytes before lines", lines: numbered(40, 1000), wantLines: container.LastWordsMaxBytes / 1000,
			wantFirst: fmt.Sprint(40 - container.LastWordsMaxBytes/1000 + 1), wantLast: "40", truncated: true},
		{name: "one long line in pieces", lines: pieces, wantLines: 1, wantFirst: strings.Repeat("é", container.LastWordsMaxBytes/2),
			wantLast: strings.Repeat("é", container.LastWordsMaxBytes/2), truncated: true},
		{name: "a last line without its end", lines: append(numbered(2, 0), LogLine{Text: []byte("cut"), Partial: true}),
			wantLines: 3, wantFirst: "1", wantLast: "cut"},
		{name: "binary", lines: []LogLine{out("\x00\xff\xfe ok")}, wantLines: 1, wantFirst: "\x00\ufffd ok", wantLast: "\x00\ufffd ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c lastWordsCollector
			for _, l := range tc.lines {
				// The runtime reuses its buffer once the callback returns.
				l.Text = bytes.Clone(l.Text)
				if err := c.add(l); err != nil {
					t.Fatal(err)
				}
				clear(l.Text)
			}
			lw := c.result()
			if tc.wantNil {
				if lw != nil {
					t.Fatalf("last words of nothing: %+v", lw)
				}
				return
			}
			if lw == nil {
				t.Fatal("no last words")
			}
			total := 0
			for _, l := range lw.Lines {
				total += len(l.Text)
				if !utf8.ValidString(l.Text) {
					t.Errorf("line not valid UTF-8: %q", l.Text)
				}
			}
			first, last := strings.TrimSpace(lw.Lines[0].Text), strings.TrimSpace(lw.Lines[len(lw.Lines)-1].Text)
			if len(lw.Lines) != tc.wantLines || first != tc.wantFirst || last != tc.wantLast || lw.Truncated != tc.truncated {
				t.Fatalf("%d lines %.20q … %.20q truncated %v; want %d %.20q … %.20q %v",
					len(lw.Lines), first, last, lw.Truncated, tc.wantLines, tc.wantFirst, tc.wantLast, tc.truncated)
			}
			if len(lw.Lines) > container.LastWordsMaxLines || total > container.LastWordsMaxBytes {
				t.Fatalf("over the bounds: %d lines, %d bytes", len(lw.Lines), total)
			}
		})
	}
}
