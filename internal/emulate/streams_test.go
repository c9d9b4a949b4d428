package emulate

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/samtemplate"
)

// fakeDispatcher fails the records whose sequence number is poison: with
// batch item failures, or as a whole when functionError.
type fakeDispatcher struct {
	poison        map[string]bool
	functionError bool
	delivered     map[string]int
	batches       [][]string
}

func (d *fakeDispatcher) call(_ context.Context, payload []byte) Invocation {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		panic(err)
	}
	var seqs []string
	resp := events.DynamoDBEventResponse{}
	failed := false
	for _, r := range ev.Records {
		seq := r.Change.SequenceNumber
		seqs = append(seqs, seq)
		if d.poison[seq] {
			failed = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		} else {
			d.delivered[seq]++
		}
	}
	d.batches = append(d.batches, seqs)
	if failed && d.functionError {
		return Invocation{Result: ResultError, Error: "boom"}
	}
	b, _ := json.Marshal(resp)
	return Invocation{Result: ResultOK, Payload: b}
}

func records(n int) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, n)
	for i := range out {
		out[i].Change.SequenceNumber = strconv.Itoa(100 + i)
		out[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Now()}
	}
	return out
}

// TestStreamRetries is the stream mapping's retry rule, table-driven: what
// is given up, and what reaches the function.
func TestStreamRetries(t *testing.T) {
	for _, tc := range []struct {
		name          string
		settings      samtemplate.MappingSettings
		poison        []string
		functionError bool
		wantGivenUp   [][2]string // first and last sequence number of each batch given up
	}{
		{name: "partial failure, bisect: the poison record alone", poison: []string{"103"},
			settings:    samtemplate.MappingSettings{Bisect: true, MaxRetries: 2, ReportBatchItemFailures: true},
			wantGivenUp: [][2]string{{"103", "103"}}},
		{name: "function error, bisect: the poison record alone", poison: []string{"105"}, functionError: true,
			settings:    samtemplate.MappingSettings{Bisect: true, MaxRetries: 1},
			wantGivenUp: [][2]string{{"105", "105"}}},
		{name: "partial failure, no bisect: from the poison record on", poison: []string{"104"},
			settings:    samtemplate.MappingSettings{MaxRetries: 1, ReportBatchItemFailures: true},
			wantGivenUp: [][2]string{{"104", "107"}}},
		{name: "two poison records", poison: []string{"101", "106"}, functionError: true,
			settings:    samtemplate.MappingSettings{Bisect: true, MaxRetries: 0},
			wantGivenUp: [][2]string{{"101", "101"}, {"106", "106"}}},
		{name: "no poison", settings: samtemplate.MappingSettings{Bisect: true, MaxRetries: 0, ReportBatchItemFailures: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDispatcher{poison: map[string]bool{}, functionError: tc.functionError, delivered: map[string]int{}}
			for _, p := range tc.poison {
				d.poison[p] = true
			}
			tc.settings.BatchSize = 8
			var givenUp [][2]string
			p := &streamPoller{m: &samtemplate.StreamMapping{Name: "m", Settings: tc.settings}, call: d.call,
				log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			p.onGiveUp = func(batch []events.DynamoDBEventRecord, _ string) {
				givenUp = append(givenUp, [2]string{batch[0].Change.SequenceNumber, batch[len(batch)-1].Change.SequenceNumber})
			}
			p.process(context.Background(), records(8), 0)
			if !slices.Equal(givenUp, tc.wantGivenUp) {
				t.Errorf("given up %v, want %v (batches %v)", givenUp, tc.wantGivenUp, d.batches)
			}
			for _, r := range records(8) {
				seq := r.Change.SequenceNumber
				inGivenUp := false
				for _, g := range givenUp {
					inGivenUp = inGivenUp || (seq >= g[0] && seq <= g[1])
				}
				if !d.poison[seq] && !inGivenUp && d.delivered[seq] == 0 {
					t.Errorf("record %s never delivered (batches %v)", seq, d.batches)
				}
			}
		})
	}
}
