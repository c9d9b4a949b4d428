package fleetfanout

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/fleetshard"
)

// TestMessageFixture: the fixture's record (an SQS event of the reconciler's
// shard queue) decodes to shard 3 of 10 of the 08:01 tick, and encoding
// that message gives its body back.
func TestMessageFixture(t *testing.T) {
	raw, err := os.ReadFile("../../events/reconciler-shard.json")
	if err != nil {
		t.Fatal(err)
	}
	if !isSQS(raw) {
		t.Fatal("the fixture is not told apart as an SQS event")
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	body := ev.Records[0].Body
	m, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Shard: fleetshard.Shard{Index: 3, Count: 10}, Tick: time.Date(2026, 11, 29, 8, 1, 0, 0, time.UTC)}
	if !m.Tick.Equal(want.Tick) || m.Shard != want.Shard {
		t.Fatalf("decoded %+v, want %+v", m, want)
	}
	enc, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != body {
		t.Fatalf("encoded %s, want the fixture's %s", enc, body)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"not JSON", `shard 3`, "invalid character"},
		{"no tick", `{"shard":0,"shards":2}`, `want "shard", "shards" and "tick"`},
		{"no count", `{"shard":0,"tick":"2026-11-29T08:01:00Z"}`, `want "shard", "shards" and "tick"`},
		{"index past the count", `{"shard":2,"shards":2,"tick":"2026-11-29T08:01:00Z"}`, "shard 2 is not one of 2"},
		{"count past the buckets", `{"shard":0,"shards":1025,"tick":"2026-11-29T08:01:00Z"}`, "outside 0..1024"},
		{"count zero", `{"shard":0,"shards":0,"tick":"2026-11-29T08:01:00Z"}`, "without a shard count"},
		{"zero tick", `{"shard":0,"shards":2,"tick":"0001-01-01T00:00:00Z"}`, "without a tick"},
		{"bad tick", `{"shard":0,"shards":2,"tick":"yesterday"}`, "cannot parse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode(%s) = %v, want an error with %q", c.body, err, c.want)
			}
		})
	}
}

// TestStale: a message is run up to one period after its tick, and
// dropped after.
func TestStale(t *testing.T) {
	tick := time.Date(2026, 11, 29, 8, 1, 0, 0, time.UTC)
	m := Message{Shard: fleetshard.Shard{Index: 1, Count: 2}, Tick: tick}
	for _, c := range []struct {
		age   time.Duration
		stale bool
	}{{0, false}, {59 * time.Second, false}, {time.Minute, false}, {time.Minute + time.Millisecond, true}, {-time.Second, false}} {
		if got := m.Stale(tick.Add(c.age), time.Minute); got != c.stale {
			t.Errorf("age %s: stale = %v, want %v", c.age, got, c.stale)
		}
	}
}

// TestTickAt: the Scheduler's scheduled time, else the EventBridge event's
// time, else now; and neither fixture is taken for an SQS event.
func TestTickAt(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		fixture string
		want    time.Time
	}{
		{"../../events/reconciler-scheduler.json", time.Date(2026, 11, 29, 8, 1, 0, 0, time.UTC)},
		{"../../events/reconciler-scheduled.json", time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)},
		{"", now},
	} {
		raw := []byte("{}")
		if c.fixture != "" {
			var err error
			if raw, err = os.ReadFile(c.fixture); err != nil {
				t.Fatal(err)
			}
		}
		if isSQS(raw) {
			t.Errorf("%s: taken for an SQS event", c.fixture)
		}
		var tk Tick
		if err := json.Unmarshal(raw, &tk); err != nil {
			t.Fatal(err)
		}
		if got := tk.At(now); !got.Equal(c.want) {
			t.Errorf("%s: tick at %s, want %s", c.fixture, got, c.want)
		}
	}
}
