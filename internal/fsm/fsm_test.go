package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/fsm"
)

// designTable is a literal copy of the design's "FSM Transition Rules" diagram,
// kept apart from the package's own table so that a typo in one is caught
// by the other.
const designTable = `
pending --> creating
pending --> failed
pending --> delete_pending
creating --> running
creating --> failed
creating --> stopped
creating --> delete_pending
running --> stopped
running --> stop_pending
running --> start_pending
running --> delete_pending
running --> paused
running --> failed
paused --> running
paused --> stopped
paused --> stop_pending
paused --> start_pending
paused --> delete_pending
paused --> failed
stop_pending --> stopping
stop_pending --> delete_pending
stop_pending --> failed
stopping --> stopped
stopping --> delete_pending
stopping --> failed
start_pending --> starting
start_pending --> failed
starting --> running
starting --> failed
delete_pending --> deleting
delete_pending --> failed
deleting --> stopped
deleting --> failed
stopped --> running
stopped --> start_pending
stopped --> delete_pending
failed --> delete_pending
`

func designAllowed(t *testing.T) map[[2]fsm.Status]bool {
	t.Helper()
	m := map[[2]fsm.Status]bool{}
	for _, line := range strings.Split(strings.TrimSpace(designTable), "\n") {
		from, to, ok := strings.Cut(line, " --> ")
		if !ok {
			t.Fatalf("bad table line %q", line)
		}
		m[[2]fsm.Status{fsm.Status(from), fsm.Status(to)}] = true
	}
	return m
}

func TestCheckMatchesDesignTableOnAllPairs(t *testing.T) {
	if len(fsm.All) != 12 {
		t.Fatalf("want 12 statuses, got %d", len(fsm.All))
	}
	want := designAllowed(t)
	pairs, allowedCount := 0, 0
	for _, from := range fsm.All {
		for _, to := range fsm.All {
			pairs++
			err := fsm.Check(from, to)
			if want[[2]fsm.Status{from, to}] {
				allowedCount++
				if err != nil {
					t.Errorf("Check(%s, %s) = %v, want allowed", from, to, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("Check(%s, %s) allowed, the design table forbids it", from, to)
				continue
			}
			if !errors.Is(err, fsm.ErrInvalidTransition) {
				t.Errorf("Check(%s, %s) error %v does not match ErrInvalidTransition", from, to, err)
			}
			if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
				t.Errorf("Check(%s, %s) error %q does not name both statuses", from, to, err)
			}
		}
	}
	if pairs != 144 || allowedCount != len(want) {
		t.Fatalf("walked %d pairs, %d allowed; the design table has %d", pairs, allowedCount, len(want))
	}
}

func TestUnknownStatusIsInvalid(t *testing.T) {
	if err := fsm.Check("exited", fsm.Stopped); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Fatalf("unknown from: %v", err)
	}
	if fsm.Status("exited").Valid() {
		t.Fatal("exited is not a status")
	}
}

func TestTerminalAndSlotStatuses(t *testing.T) {
	for _, s := range fsm.All {
		wantTerminal := s == fsm.Stopped || s == fsm.Failed
		if s.Terminal() != wantTerminal {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
		wantSlot := s == fsm.Pending || s == fsm.Creating
		if s.HoldsCreateSlot() != wantSlot {
			t.Errorf("%s.HoldsCreateSlot() = %v", s, s.HoldsCreateSlot())
		}
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
	}
}
