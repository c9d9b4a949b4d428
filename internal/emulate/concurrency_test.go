package emulate

import (
	"testing"

	"github.com/berth-io/berth/internal/samtemplate"
)

// TestCreateConcurrencyFromTemplate: the emulator runs template.yaml's
// CreateWorker with as many creates at once as the stack allows, with and
// without reserved concurrency (UseReservedConcurrency): the reservation
// when there is one, else the queue mapping's MaximumConcurrency (AWS's
// floor of 2 included), within DefaultConcurrency instances. The
// reconciler reserves 1 only with the reservations and a fleet of one
// shard (FleetShards=1; the default 0 may fan a tick out to shards that run
// at once).
func TestCreateConcurrencyFromTemplate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                          string
		params                        map[string]string
		reserved, pollers, reconciler int
	}{
		{"defaults", nil, 3, 3, 0},
		{"one shard", map[string]string{"FleetShards": "1"}, 3, 3, 1},
		{"no reservation, one shard", map[string]string{"UseReservedConcurrency": "false", "FleetShards": "1"}, 0, 3, 0},
		{"no reservation, limit 1", map[string]string{"UseReservedConcurrency": "false", "CreateQueueMaxConcurrency": "1"}, 0, 2, 0},
		{"reservation, limit 1", map[string]string{"CreateQueueMaxConcurrency": "1"}, 1, 1, 0},
		{"no reservation, limit beyond the machine's", map[string]string{"UseReservedConcurrency": "false", "CreateQueueMaxConcurrency": "10"}, 0, DefaultConcurrency, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stack, err := samtemplate.Load("../../template.yaml", samtemplate.Options{Parameters: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			f := stack.Functions["CreateWorkerFunction"]
			if f == nil {
				t.Fatal("no CreateWorkerFunction")
			}
			if f.ReservedConcurrency != tc.reserved {
				t.Errorf("CreateWorker reserved concurrency %d, want %d", f.ReservedConcurrency, tc.reserved)
			}
			if r := stack.Functions["ReconcilerFunction"].ReservedConcurrency; r != tc.reconciler {
				t.Errorf("reconciler reserved concurrency %d, want %d", r, tc.reconciler)
			}
			var m *samtemplate.QueueMapping
			for _, qm := range stack.QueueMaps {
				if qm.Function == "CreateWorkerFunction" {
					m = qm
				}
			}
			if m == nil {
				t.Fatal("no queue mapping to the CreateWorker")
			}
			p := &queuePoller{m: m, fn: &Function{Concurrency: functionConcurrency(f, DefaultConcurrency)}}
			if got := p.concurrency(); got != tc.pollers {
				t.Errorf("creates at once %d, want %d (mapping maximum concurrency %d)", got, tc.pollers, m.Settings.MaxConcurrency)
			}
		})
	}
}
