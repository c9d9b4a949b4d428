package kubernetes

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/runtime"
)

// TestReadTimestamped reads the kubelet's timestamped form: the cases the
// conformance suite cannot print on kwok (it runs no process), over the
// bytes a kubelet sends.
func TestReadTimestamped(t *testing.T) {
	long := strings.Repeat("x", 2*runtime.MaxLogLine+10)
	body := "2026-12-02T03:00:00.100000000Z one\n" +
		"2026-12-02T03:00:01.5Z a\x00b\x1b[1m\tc\r\n" +
		"2026-12-02T03:00:02Z \n" +
		"2026-12-02T03:00:03.25Z " + long + "\n" +
		"2026-12-02T03:00:04Z last without newline"
	type got struct {
		text    string
		at      time.Time
		partial bool
	}
	read := func(since time.Time) []got {
		var out []got
		err := readTimestamped(strings.NewReader(body), since, func(l runtime.LogLine) error {
			if l.Stream != "" {
				t.Errorf("a line with stream %q from mixed output", l.Stream)
			}
			out = append(out, got{string(l.Text), l.Time, l.Partial})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	all := read(time.Time{})
	want := []got{
		{"one", time.Date(2026, 12, 2, 3, 0, 0, 100e6, time.UTC), false},
		{"a\x00b\x1b[1m\tc\r", time.Date(2026, 12, 2, 3, 0, 1, 500e6, time.UTC), false},
		{"", time.Date(2026, 12, 2, 3, 0, 2, 0, time.UTC), false},
		{long[:runtime.MaxLogLine], time.Date(2026, 12, 2, 3, 0, 3, 250e6, time.UTC), true},
		{long[runtime.MaxLogLine : 2*runtime.MaxLogLine], time.Date(2026, 12, 2, 3, 0, 3, 250e6, time.UTC), true},
		{long[2*runtime.MaxLogLine:], time.Date(2026, 12, 2, 3, 0, 3, 250e6, time.UTC), false},
		{"last without newline", time.Date(2026, 12, 2, 3, 0, 4, 0, time.UTC), false},
	}
	if len(all) != len(want) {
		t.Fatalf("%d lines, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i].text != want[i].text || !all[i].at.Equal(want[i].at) || all[i].partial != want[i].partial {
			t.Errorf("line %d: %q %v %v, want %q %v %v", i, trim(all[i].text), all[i].at, all[i].partial,
				trim(want[i].text), want[i].at, want[i].partial)
		}
	}
	// The API server takes sinceTime in whole seconds; the rest is dropped here.
	if got := read(time.Date(2026, 12, 2, 3, 0, 1, 600e6, time.UTC)); len(got) != 5 || got[0].text != "" {
		t.Errorf("since 03:00:01.6: %d lines, first %q", len(got), got[0].text)
	}
	if err := readTimestamped(strings.NewReader("not-a-time x\n"), time.Time{}, func(runtime.LogLine) error { return nil }); err == nil {
		t.Error("a line without a timestamp was read")
	}
	stop := errors.New("stop")
	err := readTimestamped(strings.NewReader(body), time.Time{}, func(runtime.LogLine) error { return stop })
	var cb *callbackError
	if !errors.As(err, &cb) || !errors.Is(err, stop) {
		t.Errorf("a callback error came back as %v", err)
	}
}

func trim(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}
