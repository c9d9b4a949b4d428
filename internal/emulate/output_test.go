package emulate_test

import "testing"

// TestWithoutBookkeeping: a failing stack's log keeps the functions' own
// lines and the RIE's lines about crashes and resets, and drops the RIE's
// per-invocation lines and the metric documents (lines as the emulator
// writes them).
func TestWithoutBookkeeping(t *testing.T) {
	t.Parallel()
	kept := `[ApiFunction#1] {"time":"2026-12-05T17:17:20.24389414Z","level":"INFO","msg":"request","path":"/api/containers/x/wait","status":408}
[WatcherFunction#2] 05 Dec 2026 17:18:00,383 [ERROR] (rapid) Invoke failed InvokeID=0e60497f error=errResetReceived
{"time":"2026-12-05T17:17:17.717921869Z","level":"INFO","msg":"invoke","function":"WatcherFunction","result":"ok"}
`
	dropped := `[ApiFunction#1] 05 Dec 2026 17:17:00,241 [INFO] (rapid) INVOKE START(requestId: 093cdcb4)
[ApiFunction#1] 05 Dec 2026 17:17:20,246 [INFO] (rapid) INVOKE RTDONE(status: success, produced bytes: 0, duration: 20004.359000ms)
[ApiFunction#1] START RequestId: 093cdcb4 Version: $LATEST
[ApiFunction#1] END RequestId: 093cdcb4
[ApiFunction#1] REPORT RequestId: 093cdcb4	Duration: 20004.76 ms	Billed Duration: 20005 ms	Memory Size: 256 MB	Max Memory Used: 256 MB
[WatcherFunction#1] {"Function":"s-WatcherFunction","WatcherEvents":2,"_aws":{"CloudWatchMetrics":[{"Metrics":[{"Name":"WatcherEvents","Unit":"Count"}],"Namespace":"berth"}],"Timestamp":1796491037709}}
`
	if got := withoutBookkeeping(dropped + kept + dropped); got != kept {
		t.Errorf("withoutBookkeeping kept:\n%s\nwant:\n%s", got, kept)
	}
}
