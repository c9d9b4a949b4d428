package fsm_test

import (
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/fsm"
)

// Every status change goes through Check: a stop may be asked of a running
// container, but a pending one (not made yet) can only be made, failed or
// deleted. The error names both ends and matches ErrInvalidTransition.
func ExampleCheck() {
	fmt.Println(fsm.Check(fsm.Running, fsm.StopPending))

	err := fsm.Check(fsm.Pending, fsm.StopPending)
	fmt.Println(err)
	fmt.Println(errors.Is(err, fsm.ErrInvalidTransition))

	var te *fsm.TransitionError
	if errors.As(err, &te) {
		fmt.Println("refused:", te.From, "→", te.To)
	}
	// Output:
	// <nil>
	// invalid transition from "pending" to "stop_pending"
	// true
	// refused: pending → stop_pending
}

// Next reads the transition table: the happy path of a create is
// pending → creating → running, a user's stop goes through stop_pending and
// stopping, and failed leaves only by deletion.
func ExampleNext() {
	for _, s := range []fsm.Status{fsm.Pending, fsm.Creating, fsm.StopPending, fsm.Stopped, fsm.Failed} {
		fmt.Printf("%-12s → %v (terminal: %v)\n", s, fsm.Next(s), s.Terminal())
	}
	// Output:
	// pending      → [creating failed delete_pending] (terminal: false)
	// creating     → [running failed stopped delete_pending] (terminal: false)
	// stop_pending → [stopping delete_pending failed] (terminal: false)
	// stopped      → [running start_pending delete_pending] (terminal: true)
	// failed       → [delete_pending] (terminal: true)
}
