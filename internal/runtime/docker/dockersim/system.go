package dockersim

import (
	"net/http"
	"runtime"

	"github.com/moby/moby/api/types/container"
)

// APIVersion is the Engine API version the simulation speaks; clients
// negotiate down to it.
const APIVersion = "1.47"

// ping serves /_ping, which clients negotiate the API version with.
func (h *Host) ping(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Api-Version", APIVersion)
	w.Header().Set("Ostype", "linux")
	w.Header().Set("Cache-Control", "no-cache, no-store, must-revalidate")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write([]byte("OK"))
}

// version serves GET /version.
func (h *Host) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"Version": "berth-dockersim", "ApiVersion": APIVersion, "MinAPIVersion": "1.24",
		"Os": "linux", "Arch": runtime.GOARCH, "GoVersion": runtime.Version(),
	})
}

// info serves GET /info: the host's name and its containers by state.
func (h *Host) info(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	var running, paused, stopped int
	for _, c := range h.containers {
		switch c.status {
		case container.StateRunning:
			running++
		case container.StatePaused:
			paused++
		default:
			stopped++
		}
	}
	n, images := len(h.containers), len(h.images)
	h.mu.Unlock()
	writeJSON(w, map[string]any{
		"ID": h.name, "Name": h.name, "ServerVersion": "berth-dockersim", "OperatingSystem": "berth dockersim",
		"OSType": "linux", "Architecture": runtime.GOARCH, "Driver": "overlay2",
		"Containers": n, "ContainersRunning": running, "ContainersPaused": paused, "ContainersStopped": stopped,
		"Images": images,
	})
}
