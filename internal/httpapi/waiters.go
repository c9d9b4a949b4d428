package httpapi

import (
	"sync"
)

// waiterLimits caps the GET /wait calls served at once, in total and per
// caller, so that one caller's waits cannot make everyone else's 429. The
// zero value caps nothing.
type waiterLimits struct {
	// total holds a token per wait being served (nil: no total cap).
	total chan struct{}
	// perCaller is the most one caller may hold at once (0: no cap).
	perCaller int

	mu     sync.Mutex
	counts map[string]int // waits in progress by caller (User)
}

func newWaiterLimits(total, perCaller int) *waiterLimits {
	l := &waiterLimits{perCaller: max(perCaller, 0), counts: map[string]int{}}
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

// acquire takes a place for one wait of caller, or returns the 429 error
// of the limit that is full. A place taken is given back by release.
func (l *waiterLimits) acquire(caller string) (release func(), err error) {
	if l.perCaller > 0 {
		l.mu.Lock()
		if l.counts[caller] >= l.perCaller {
			l.mu.Unlock()
			return nil, errTooManyOwnWaiters
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
			return nil, errTooManyWaiters
		}
	}
	return func() {
		if l.total != nil {
			<-l.total
		}
		own()
	}, nil
}
