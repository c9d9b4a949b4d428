package httpapi

import (
	"errors"
	"sync"
)

// waiterLimits caps the calls of one kind that hold a connection (GET
// /wait, logs follows) served at once, in total and per caller, so that
// one caller's calls cannot make everyone else's 429.
type waiterLimits struct {
	// total holds a token per wait being served (nil: no total cap).
	total chan struct{}
	// perCaller is the most one caller may hold at once (0: no cap).
	perCaller int

	// full and ownFull are the 429 errors of the total and the
	// per-caller cap.
	full, ownFull error

	mu     sync.Mutex
	counts map[string]int // calls in progress by caller (User)
}

func newWaiterLimits(total, perCaller int) *waiterLimits {
	return newLimits(total, perCaller, errTooManyWaiters, errTooManyOwnWaiters)
}

// newFollowLimits caps the logs follows (Options.MaxFollows,
// MaxFollowsPerCaller).
func newFollowLimits(total, perCaller int) *waiterLimits {
	return newLimits(total, perCaller, errTooManyFollows, errTooManyOwnFollows)
}

func newLimits(total, perCaller int, full, ownFull error) *waiterLimits {
	l := &waiterLimits{perCaller: max(perCaller, 0), counts: map[string]int{}, full: full, ownFull: ownFull}
	if total > 0 {
		l.total = make(chan struct{}, total)
	}
	return l
}

// errTooManyOwnWaiters is a GET /wait beyond Options.MaxWaitersPerCaller:
// a 429 like errTooManyWaiters, saying whose calls are too many.
var errTooManyOwnWaiters = fmtErr{
	msg: "too many of your GET /wait calls in progress; retry later or poll GET /api/containers/{id}",
	err: errTooManyWaiters,
}

// errTooManyFollows is a logs follow beyond Options.MaxFollows: a 429.
var errTooManyFollows = errors.New("too many logs follows in progress; retry later, or read the logs without follow")

// errTooManyOwnFollows is a logs follow beyond
// Options.MaxFollowsPerCaller: a 429 saying whose follows are too many.
var errTooManyOwnFollows = fmtErr{
	msg: "too many of your logs follows in progress; end one, or read the logs without follow",
	err: errTooManyFollows,
}

// acquire takes a place for one call of caller, or returns the 429 error
// of the limit that is full. A place taken is given back by release.
func (l *waiterLimits) acquire(caller string) (release func(), err error) {
	if l.perCaller > 0 {
		l.mu.Lock()
		if l.counts[caller] >= l.perCaller {
			l.mu.Unlock()
			return nil, l.ownFull
		}
		l.counts[caller]++
		l.mu.Unlock()
	}
	own := func() {
		if l.perCaller == 0 {
			return
		}
		l.mu.Lock()
		if l.counts[caller]--; l.counts[caller] <= 0 {
			delete(l.counts, caller)
		}
		l.mu.Unlock()
	}
	if l.total != nil {
		select {
		case l.total <- struct{}{}:
		default:
			own()
			return nil, l.full
		}
	}
	return func() {
		if l.total != nil {
			<-l.total
		}
		own()
	}, nil
}
