package dockersim

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
)

// lookup finds a container by id, name ("/name" too) or unique id prefix.
// The caller holds h.mu.
func (h *Host) lookup(ref string) (*simContainer, *apiError) {
	if c := h.containers[ref]; c != nil {
		return c, nil
	}
	if c := h.names[strings.TrimPrefix(ref, "/")]; c != nil {
		return c, nil
	}
	if len(ref) >= 12 {
		for id, c := range h.containers {
			if strings.HasPrefix(id, ref) {
				return c, nil
			}
		}
	}
	return nil, noSuchContainer(ref)
}

// create makes a container of req named name.
func (h *Host) create(name string, req container.CreateRequest) (string, *apiError) {
	if req.Config == nil || req.Config.Image == "" {
		return "", errorf(http.StatusBadRequest, "config.Image is required")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.images[normalizeImage(req.Config.Image)]; !ok {
		return "", errorf(http.StatusNotFound, "No such image: %s", req.Config.Image)
	}
	if name == "" {
		name = "sim_" + newID()[:12]
	}
	if other := h.names[name]; other != nil {
		return "", errorf(http.StatusConflict, `Conflict. The container name "/%s" is already in use by container "%s". You have to remove (or rename) that container to be able to reuse that name.`, name, other.id)
	}
	c := &simContainer{id: newID(), name: name, created: time.Now().UTC(), config: *req.Config,
		status: container.StateCreated, done: make(chan struct{})}
	close(c.done) // no run yet
	if hc := req.HostConfig; hc != nil {
		c.hostCfg = container.HostConfig{NetworkMode: hc.NetworkMode, Binds: hc.Binds, Mounts: hc.Mounts,
			RestartPolicy: hc.RestartPolicy}
		c.hostCfg.NanoCPUs, c.hostCfg.Memory = hc.NanoCPUs, hc.Memory
		c.ports = h.publish(hc.PortBindings)
	}
	c.runFor, c.exitWith = behaviour(c.config.Env, h.fleet.opts.RunFor)
	h.containers[c.id], h.names[name] = c, c
	h.emit(events.ActionCreate, c)
	return c.id, nil
}

// publish gives each port binding that asks for any host port (as berth's
// do) the host's next port, on both address families as an engine reports
// them. Nothing listens there: the simulation runs no processes.
func (h *Host) publish(bindings network.PortMap) network.PortMap {
	if len(bindings) == 0 {
		return nil
	}
	out := network.PortMap{}
	for port, bs := range bindings {
		for _, b := range bs {
			hp := b.HostPort
			if hp == "" || hp == "0" {
				hp = strconv.Itoa(h.nextPort)
				h.nextPort++
			}
			out[port] = append(out[port], network.PortBinding{HostIP: anyV4, HostPort: hp}, network.PortBinding{HostIP: anyV6, HostPort: hp})
		}
	}
	return out
}

// start runs the container: 304 when it runs already, a conflict when it
// is paused (as the engine answers).
func (h *Host) start(ref string) (int, *apiError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookup(ref)
	switch {
	case err != nil:
		return 0, err
	case c.status == container.StatePaused:
		return 0, errorf(http.StatusConflict, "cannot start a paused container, try unpause instead")
	case c.status == container.StateRunning:
		return http.StatusNotModified, nil
	}
	c.status, c.startedAt, c.done = container.StateRunning, time.Now().UTC(), make(chan struct{})
	c.run++
	h.emit(events.ActionStart, c)
	if c.runFor > 0 {
		h.armExit(c, c.run, c.runFor)
	}
	return http.StatusNoContent, nil
}

// armExit ends run of c with its exit code after d; a paused process
// does not advance, so the exit waits for the resume.
func (h *Host) armExit(c *simContainer, run int, d time.Duration) {
	c.timer = time.AfterFunc(d, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch {
		case c.run != run || !c.running() || h.containers[c.id] != c:
		case c.status == container.StatePaused:
			h.armExit(c, run, 50*time.Millisecond)
		default:
			h.exit(c, c.exitWith)
		}
	})
}

// exit ends the current run with code. The caller holds h.mu.
func (h *Host) exit(c *simContainer, code int) {
	c.stopTimer()
	c.status, c.exitCode, c.finishedAt = container.StateExited, code, time.Now().UTC()
	close(c.done)
	h.emit(events.ActionDie, c, "exitCode", strconv.Itoa(code))
}

// stop ends a running (or paused) container as SIGTERM does: at once,
// since a simulated process always honours it; 304 when it does not run.
func (h *Host) stop(ref string) (int, *apiError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookup(ref)
	if err != nil {
		return 0, err
	}
	if !c.running() {
		return http.StatusNotModified, nil
	}
	h.emit(events.ActionKill, c, "signal", "15")
	h.exit(c, exitStopped)
	h.emit(events.ActionStop, c)
	return http.StatusNoContent, nil
}

// kill ends a running container with a signal (SIGKILL by default).
func (h *Host) kill(ref, signal string) *apiError {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookup(ref)
	if err != nil {
		return err
	}
	if !c.running() {
		return errorf(http.StatusConflict, "cannot kill container: %s: container %s is not running", ref, c.id)
	}
	code, sig := exitKilled, "9"
	if n, err := strconv.Atoi(signal); err == nil && n > 0 {
		code, sig = 128+n, signal
	}
	h.emit(events.ActionKill, c, "signal", sig)
	h.exit(c, code)
	return nil
}

// remove deletes a container; a running one only with force (killed
// first, as the engine does).
func (h *Host) remove(ref string, force bool) *apiError {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookup(ref)
	if err != nil {
		return err
	}
	if c.running() {
		if !force {
			return errorf(http.StatusConflict, "cannot remove container %q: container is running: stop the container before removing or force remove", ref)
		}
		h.emit(events.ActionKill, c, "signal", "9")
		h.exit(c, exitKilled)
	}
	c.stopTimer()
	delete(h.containers, c.id)
	delete(h.names, c.name)
	h.emit(events.ActionDestroy, c)
	return nil
}

// freeze pauses (pause true) or unpauses a running container, with the
// engine's answers to a repeat: already paused a conflict, not paused a
// server error.
func (h *Host) freeze(ref string, pause bool) *apiError {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookup(ref)
	switch {
	case err != nil:
		return err
	case !c.running():
		return errorf(http.StatusConflict, "container %s is not running", c.id)
	case pause && c.status == container.StatePaused:
		return errorf(http.StatusConflict, "container %s is already paused", c.id)
	case !pause && c.status != container.StatePaused:
		return errorf(http.StatusInternalServerError, "container %s is not paused", c.id)
	case pause:
		c.status = container.StatePaused
		h.emit(events.ActionPause, c)
	default:
		c.status = container.StateRunning
		h.emit(events.ActionUnPause, c)
	}
	return nil
}

// Run creates a container named name from cfg and starts it, as a create
// and a start through the API do (with their events), without a call: for
// filling a fleet to a platform's size quickly. It returns the container's
// id.
func (h *Host) Run(name string, cfg container.Config) (string, error) {
	id, err := h.create(name, container.CreateRequest{Config: &cfg, HostConfig: &container.HostConfig{}})
	if err != nil {
		return "", err
	}
	if _, err := h.start(id); err != nil {
		return "", err
	}
	return id, nil
}
