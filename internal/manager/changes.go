package manager

import "sync"

// changes wakes Wait when an instance changes in this process: the local
// server's workers write through the manager's store, so a waiter learns of
// a new status at once instead of at its next poll. Writes made by other
// processes (the worker Lambdas) are still found by polling.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

func newChanges() *changes { return &changes{ch: make(chan struct{})} }

// next returns a channel closed at the next change. Take it before reading
// the state it guards, so a change in between is not missed.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *changes) fire() {
	c.mu.Lock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.mu.Unlock()
}
