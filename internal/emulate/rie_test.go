package emulate

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/testenv"
)

// TestFunctionUnderRIE: one function under the RIE — a cold then a warm
// invocation, a function error, a panic and a timeout each reported as
// such, and the function serving again after each.
func TestFunctionUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a function under the RIE; skipped with -short")
	}
	ctx := context.Background()
	rie, err := RIEBinary(ctx)
	if err != nil {
		testenv.Missing(t, "the Lambda Runtime Interface Emulator", err.Error())
	}
	dir, _ := filepath.Abs("testdata/sleeper")
	bootstrap, err := NewBuilder(t.TempDir()).build(ctx, Package{Dir: dir, Tags: DefaultTags})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	env := []string{"PATH=" + os.Getenv("PATH"), "AWS_LAMBDA_FUNCTION_NAME=sleeper", "AWS_LAMBDA_FUNCTION_TIMEOUT=2"}
	fn := newFunction("Sleeper", 1, 2*time.Second, rie, bootstrap, env, log, io.Discard)
	t.Cleanup(fn.Stop)

	for i, tc := range []struct {
		event string
		want  Result
		cold  bool
	}{
		{`{}`, ResultOK, true},
		{`{}`, ResultOK, false},
		{`{"fail":true}`, ResultError, false},
		{`{}`, ResultOK, false},
		{`{"panic":true}`, ResultCrash, false},
		{`{}`, ResultOK, false},
		{`{"sleep":"10s"}`, ResultTimeout, false},
		{`{}`, ResultOK, false},
	} {
		t0 := time.Now()
		inv := fn.call(ctx, []byte(tc.event))
		if inv.Result != tc.want || (tc.cold && !inv.Cold) {
			t.Errorf("%d %s: %s (cold %v, %s, %s), want %s", i, tc.event, inv.Result, inv.Cold, inv.Error, inv.Payload, tc.want)
		}
		if tc.want == ResultTimeout && time.Since(t0) > 2*time.Second+invokeMargin+time.Second {
			t.Errorf("the timeout took %v", time.Since(t0))
		}
		if tc.want == ResultOK && string(inv.Payload) != `{"ok":true}` {
			t.Errorf("%d: payload %s", i, inv.Payload)
		}
	}
	if !bytes.Contains(logs.Bytes(), []byte(`"msg":"invoke","function":"Sleeper"`)) {
		t.Errorf("no invocation lines:\n%s", logs.String())
	}
}
