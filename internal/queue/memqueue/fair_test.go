package memqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/queue"
	"github.com/berth-io/berth/internal/queue/memqueue"
)

// TestFairBy: owner a's 50 messages, sent before owner b's 5, do not delay
// b's by 50 receives: with FairBy the owner with the shorter backlog comes
// first (b's are the first 5), each owner's in the order sent; without it
// the queue is in order, b's last.
func TestFairBy(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			o := memqueue.Options{}
			if fair {
				o.FairBy = "owner"
			}
			q := memqueue.New(o)
			ctx := context.Background()
			var msgs []queue.Outgoing
			for i := range 50 {
				msgs = append(msgs, queue.Outgoing{ID: fmt.Sprintf("a%d", i), Body: fmt.Appendf(nil, "a%d", i), Attributes: map[string]string{"owner": "a"}})
			}
			for i := range 5 {
				msgs = append(msgs, queue.Outgoing{ID: fmt.Sprintf("b%d", i), Body: fmt.Appendf(nil, "b%d", i), Attributes: map[string]string{"owner": "b"}})
			}
			for len(msgs) > 0 {
				n := min(10, len(msgs))
				if err := q.Send(ctx, msgs[:n]); err != nil {
					t.Fatal(err)
				}
				msgs = msgs[n:]
			}
			var order []string
			seen := map[string]int{}
			for range 55 {
				ds, err := q.Receive(ctx, 1, time.Second)
				if err != nil || len(ds) != 1 {
					t.Fatalf("receive: %v %v", ds, err)
				}
				d := ds[0]
				owner := d.Attributes["owner"]
				if want := fmt.Sprintf("%s%d", owner, seen[owner]); string(d.Body) != want {
					t.Fatalf("received %s; want %s (each owner's in the order sent)", d.Body, want)
				}
				seen[owner]++
				order = append(order, string(d.Body))
				if err := q.Ack(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			lastB := 0
			for i, id := range order {
				if id[0] == 'b' {
					lastB = i + 1
				}
			}
			if fair && lastB != 5 || !fair && lastB != 55 {
				t.Errorf("b's last message was received %dth: %v", lastB, order[:12])
			}
		})
	}
}

// TestFairByInFlight: owner a holds 2 messages in flight; b's message,
// sent after a's next one, is received first.
func TestFairByInFlight(t *testing.T) {
	q := memqueue.New(memqueue.Options{FairBy: "owner"})
	ctx := context.Background()
	send := func(body, owner string) {
		if err := q.Send(ctx, []queue.Outgoing{{ID: body, Body: []byte(body), Attributes: map[string]string{"owner": owner}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"a0", "a1", "a2"} {
		send(b, "a")
	}
	for range 2 {
		if ds, err := q.Receive(ctx, 1, time.Second); err != nil || len(ds) != 1 || ds[0].Body[0] != 'a' {
			t.Fatalf("a's: %v %v", ds, err)
		}
	}
	send("b0", "b")
	ds, err := q.Receive(ctx, 1, time.Second)
	if err != nil || len(ds) != 1 || string(ds[0].Body) != "b0" {
		t.Fatalf("with 2 of a's in flight, received %v %v; want b0", ds, err)
	}
}
