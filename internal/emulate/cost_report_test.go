package emulate_test

import (
	"reflect"
	"strings"
	"testing"
)

// TestRIEReports reads the RIE's REPORT lines as AWS bills them: Duration
// plus a cold start's Init Duration, rounded up to the millisecond, and
// every line an instance printed up to its REPORT as that invocation's log.
func TestRIEReports(t *testing.T) {
	const (
		startA   = "START RequestId: a Version: $LATEST"
		logA     = `{"level":"INFO","msg":"request"}`
		endA     = "END RequestId: a"
		reportA  = "REPORT RequestId: a\tInit Duration: 10.20 ms\tDuration: 3.50 ms\tBilled Duration: 4 ms\tMemory Size: 256 MB\tMax Memory Used: 256 MB\t"
		startB   = "START RequestId: b Version: $LATEST"
		reportB  = "REPORT RequestId: b\tDuration: 0.10 ms\tBilled Duration: 1 ms\tMemory Size: 256 MB\tMax Memory Used: 256 MB\t"
		reportC  = "REPORT RequestId: c\tDuration: 2.00 ms\tBilled Duration: 2 ms\tMemory Size: 256 MB\tMax Memory Used: 256 MB\t"
		emulator = `{"msg":"invoke","function":"ApiFunction"}`
	)
	logs := strings.Join([]string{
		"[ApiFunction#1] " + startA, emulator, "[ApiFunction#1] " + logA, "[ApiFunction#1] " + endA, "[ApiFunction#1] " + reportA,
		"[DispatcherFunction#2] " + startB,
		"[ApiFunction#1] " + reportC,
		"[DispatcherFunction#2] " + reportB, "",
	}, "\n")
	size := func(lines ...string) int { return len(strings.Join(lines, "\n")) + 1 }
	want := map[string][]rieReport{
		"ApiFunction#1": {
			{BilledMS: 14, LogBytes: size(startA, logA, endA, reportA)},
			{BilledMS: 2, LogBytes: size(reportC)},
		},
		"DispatcherFunction#2": {{BilledMS: 1, LogBytes: size(startB, reportB)}},
	}
	if got := rieReports(logs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
