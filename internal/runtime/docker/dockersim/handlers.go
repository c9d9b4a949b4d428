package dockersim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
)

func (h *Host) containerCreate(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "create: "+err.Error())
		return
	}
	id, err := h.create(r.URL.Query().Get("name"), req)
	if err != nil {
		answer(w, err, 0)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(container.CreateResponse{ID: id, Warnings: []string{}})
}

// containerList serves GET /containers/json: running (and paused)
// containers, all with all=1, that match the filters, newest first.
func (h *Host) containerList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseFilters(q.Get("filters"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	all := q.Get("all") == "1" || q.Get("all") == "true"
	now := time.Now()
	h.mu.Lock()
	out := make([]container.Summary, 0)
	for _, c := range h.containers {
		if (all || c.running()) && f.matchContainer(c) {
			out = append(out, c.summary(now))
		}
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b container.Summary) int { return int(b.Created - a.Created) })
	writeJSON(w, out)
}

func (h *Host) containerInspect(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	c, err := h.lookup(r.PathValue("id"))
	var res container.InspectResponse
	if err == nil {
		res = c.inspect()
	}
	h.mu.Unlock()
	if err != nil {
		answer(w, err, 0)
		return
	}
	writeJSON(w, res)
}

func (h *Host) containerStart(w http.ResponseWriter, r *http.Request) {
	status, err := h.start(r.PathValue("id"))
	answer(w, err, status)
}

func (h *Host) containerStop(w http.ResponseWriter, r *http.Request) {
	status, err := h.stop(r.PathValue("id"))
	answer(w, err, status)
}

func (h *Host) containerKill(w http.ResponseWriter, r *http.Request) {
	answer(w, h.kill(r.PathValue("id"), strings.TrimPrefix(r.URL.Query().Get("signal"), "SIG")), http.StatusNoContent)
}

func (h *Host) containerFreeze(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		answer(w, h.freeze(r.PathValue("id"), pause), http.StatusNoContent)
	}
}

func (h *Host) containerRemove(w http.ResponseWriter, r *http.Request) {
	force := r.URL.Query().Get("force") == "1" || r.URL.Query().Get("force") == "true"
	answer(w, h.remove(r.PathValue("id"), force), http.StatusNoContent)
}

// containerStats serves one stats reading (stream=false), with the
// previous sample a second before: a steady small usage.
func (h *Host) containerStats(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	c, err := h.lookup(r.PathValue("id"))
	var up bool
	var started time.Time
	var limit int64
	if err == nil {
		up, started, limit = c.status == container.StateRunning, c.startedAt, c.hostCfg.Memory
	}
	h.mu.Unlock()
	if err != nil {
		answer(w, err, 0)
		return
	}
	now := time.Now().UTC()
	s := container.StatsResponse{Read: now, PreRead: now.Add(-time.Second)}
	if up {
		// 1 % of a core since the start; 8 MiB in use.
		used := uint64(now.Sub(started).Nanoseconds() / 100)
		s.CPUStats.CPUUsage.TotalUsage = used + uint64(10*time.Millisecond)
		s.PreCPUStats.CPUUsage.TotalUsage = used
		s.MemoryStats.Usage = 8 << 20
		s.MemoryStats.Limit = uint64(max(limit, 0))
		s.PidsStats.Current = 1
	}
	writeJSON(w, s)
}

// containerLogs serves an empty log (the simulation runs no processes);
// with follow=1 it stays open until the run ends.
func (h *Host) containerLogs(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	c, err := h.lookup(r.PathValue("id"))
	var done chan struct{}
	if err == nil {
		done = c.done
	}
	h.mu.Unlock()
	if err != nil {
		answer(w, err, 0)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	w.WriteHeader(http.StatusOK)
	if q := r.URL.Query().Get("follow"); q != "1" && q != "true" {
		return
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	select {
	case <-done:
	case <-r.Context().Done():
	case <-h.closed:
	}
}

// containerExec refuses every exec the engine would accept: there is no
// process to run a command in (501, which berth reads as an invalid
// request); a missing container is not found and one not running a
// conflict, as the engine answers.
func (h *Host) containerExec(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	c, err := h.lookup(r.PathValue("id"))
	var status container.ContainerState
	if err == nil {
		status = c.status
	}
	h.mu.Unlock()
	switch {
	case err != nil:
		answer(w, err, 0)
	case status == container.StatePaused:
		writeError(w, http.StatusConflict, "container "+c.id+" is paused, unpause the container before exec")
	case status != container.StateRunning:
		writeError(w, http.StatusConflict, "container "+c.id+" is not running")
	default:
		writeError(w, http.StatusNotImplemented, "exec: the simulated engine runs no processes")
	}
}
