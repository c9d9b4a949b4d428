// Package fleetfanout is how a sharded background loop (the reconciler, the
// watcher) fans out on AWS: the schedule's tick invokes the loop's function,
// which sends one message per shard (Message) to the loop's shard queue;
// the same function consumes that queue (an SQS event source, batch size
// 1) and runs the shard's pass with the shard its message names. With one
// shard, or no shard queue, the tick runs the whole pass itself. Loop is
// the one handler both functions serve, telling a tick from an SQS event.
package fleetfanout

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/fleetshard"
)

// Message is one shard's share of a tick: {"shard":i,"shards":n,"tick":t}.
// A shard's pass uses its Count, not the function's own configuration:
// one tick's messages agree on the count, so when the count changes a
// node moving between shards is visited by exactly one of them in that
// period.
type Message struct {
	fleetshard.Shard
	// Tick is the schedule's time of the tick that sent the message.
	Tick time.Time `json:"tick"`
}

// Encode is the message's JSON body.
func (m Message) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Validate refuses a message that names no shard of a split fleet or no
// tick.
func (m Message) Validate() error {
	if err := m.Shard.Validate(); err != nil {
		return fmt.Errorf("fleetfanout: %w", err)
	}
	if m.Count < 1 {
		return fmt.Errorf("fleetfanout: shard message without a shard count: %s", m.Shard)
	}
	if m.Tick.IsZero() {
		return errors.New("fleetfanout: shard message without a tick")
	}
	return nil
}

// Decode reads a message body, refusing unknown fields and a message
// Validate refuses.
func Decode(body []byte) (Message, error) {
	var raw struct {
		Shard  *int       `json:"shard"`
		Shards *int       `json:"shards"`
		Tick   *time.Time `json:"tick"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Message{}, fmt.Errorf("fleetfanout: shard message: %w", err)
	}
	if raw.Shard == nil || raw.Shards == nil || raw.Tick == nil {
		return Message{}, errors.New(`fleetfanout: shard message: want "shard", "shards" and "tick"`)
	}
	m := Message{Shard: fleetshard.Shard{Index: *raw.Shard, Count: *raw.Shards}, Tick: *raw.Tick}
	return m, m.Validate()
}

// Stale says whether m is older than one period at now: the next tick's
// message covers its shard, so running it too could visit the shard twice
// in one period (or, after the count changed, a node under two counts).
func (m Message) Stale(now time.Time, period time.Duration) bool {
	return now.Sub(m.Tick) > period
}
