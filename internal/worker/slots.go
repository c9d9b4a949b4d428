package worker

import "context"

// Slots is a counting semaphore: the local server's create concurrency
// limit. It also reports how many are held, for /healthz and tests.
type Slots struct{ ch chan struct{} }

// NewSlots returns n slots.
func NewSlots(n int) *Slots { return &Slots{ch: make(chan struct{}, n)} }

// Acquire waits for a slot or ctx's end.
func (s *Slots) Acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release returns a slot.
func (s *Slots) Release() {
	if s != nil {
		<-s.ch
	}
}

// InUse is the number of slots held.
func (s *Slots) InUse() int {
	if s == nil {
		return 0
	}
	return len(s.ch)
}
