package startstop

import "context"

// Service is one background loop with a start/stop life cycle. A Group
// drives the services it holds through this contract:
//
//   - Start runs the service in a goroutine of its own and returns at once;
//     an error means it did not start (and Stopped will not be closed). The
//     service runs until Stop is called or ctx ends. A service starts once.
//   - Started is closed once the service runs; Stopped once it has
//     returned, after Started.
//   - Stop asks the service to end and returns when it has (Stopped is
//     closed). It may be called more than once; before Start it does
//     nothing.
//   - Err is why the service ended on its own, once Stopped is closed: nil
//     when it ended because it was stopped (or had nothing more to do).
type Service interface {
	// Name says which service this is, in logs and in a Group's errors.
	Name() string
	Start(ctx context.Context) error
	Stop()
	Started() <-chan struct{}
	Stopped() <-chan struct{}
	Err() error
}
