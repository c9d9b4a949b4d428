package dockersim

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// Faults are what a simulated host does wrong. The zero value is a healthy
// host.
type Faults struct {
	// Latency is added before every answer (and before an event stream's
	// headers).
	Latency time.Duration
	// Hang makes the host accept connections and requests and never
	// answer: each call waits until its client gives up (or the fleet
	// closes).
	Hang bool
	// Down makes the host refuse connections: its listener is closed (and
	// with it every open connection) until Down is cleared.
	Down bool
	// ErrorRate is the fraction (0 to 1) of calls answered with a 500
	// server error, which berth's runtime reads as the engine unavailable.
	ErrorRate float64
}

// withFaults applies the host's faults (other than Down, which is the
// listener's) before next answers.
func (h *Host) withFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := h.Faults()
		h.calls.Add(1)
		if f.Hang {
			select {
			case <-r.Context().Done():
			case <-h.closed:
			}
			return
		}
		if f.Latency > 0 {
			t := time.NewTimer(f.Latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f.ErrorRate > 0 && rand.Float64() < f.ErrorRate {
			writeError(w, http.StatusInternalServerError, "simulated engine error")
			return
		}
		next.ServeHTTP(w, r)
	})
}
