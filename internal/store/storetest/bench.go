package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// RunBenchmarks measures create and transition throughput of a backend.
func RunBenchmarks(b *testing.B, newStore Factory) {
	b.Run("Create", func(b *testing.B) {
		clock := NewClock()
		s := newStore(b, clock.Now)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.CreateInstance(ctx, NewCreate(clock, "bench")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Transition", func(b *testing.B) {
		clock := NewClock()
		s := newStore(b, clock.Now)
		ctx := context.Background()
		inst := move(b, s, clock, move(b, s, clock, mustCreate(b, s, NewCreate(clock, "bench")), fsm.Creating), fsm.Running)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var err error
			inst, err = s.Transition(ctx, store.TransitionParams{
				ID: inst.ID, ExpectVersion: inst.Version, From: fsm.Running, To: fsm.Running,
				Update: func(i *container.Instance) { i.StatusReason = "bench" },
				Event:  &container.Event{Type: "Bench", At: clock.Now()},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateParallel", func(b *testing.B) {
		clock := NewClock()
		s := newStore(b, clock.Now)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.CreateInstance(ctx, NewCreate(clock, "bench")); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
	})
}
