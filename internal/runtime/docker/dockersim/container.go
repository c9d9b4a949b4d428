package dockersim

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Env a container's spec may carry to shape its simulated run.
const (
	// EnvRunFor is how long the container runs before it exits by itself
	// (a Go duration, "300ms"); without it the fleet's RunFor.
	EnvRunFor = "BERTH_SIM_RUN_FOR"
	// EnvExitCode is the code it exits with by itself. Defaults to 0.
	EnvExitCode = "BERTH_SIM_EXIT_CODE"
)

// Exit codes of a run ended from outside, as a shell's process reports
// them: 128 + the signal.
const (
	exitStopped = 143 // SIGTERM
	exitKilled  = 137 // SIGKILL
)

// simContainer is one container's state. Its fields are guarded by its
// host's mu.
type simContainer struct {
	id, name string
	created  time.Time
	config   container.Config     // as created (Image, Labels, Env, command)
	hostCfg  container.HostConfig // trimmed: network mode, resources, mounts, binds
	ports    network.PortMap      // the host ports given to published ports

	status     container.ContainerState
	exitCode   int
	startedAt  time.Time
	finishedAt time.Time

	runFor   time.Duration
	exitWith int
	timer    *time.Timer
	run      int           // counts runs, so a stale timer does nothing
	done     chan struct{} // closed when the current run ends
}

func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// behaviour reads the run time and exit code from env, with the fleet's
// default run time.
func behaviour(env []string, runFor time.Duration) (time.Duration, int) {
	code := 0
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvRunFor:
			if d, err := time.ParseDuration(v); err == nil {
				runFor = d
			}
		case EnvExitCode:
			if n, err := strconv.Atoi(v); err == nil {
				code = n
			}
		}
	}
	return runFor, code
}

// running is whether the container's process is up (paused included).
func (c *simContainer) running() bool {
	return c.status == container.StateRunning || c.status == container.StatePaused
}

func (c *simContainer) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// attributes are an event's actor attributes: the labels, name and image,
// and extra.
func (c *simContainer) attributes(extra ...string) map[string]string {
	a := make(map[string]string, len(c.config.Labels)+2+len(extra)/2)
	for k, v := range c.config.Labels {
		a[k] = v
	}
	a["name"], a["image"] = c.name, c.config.Image
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

// statusText is the list's human status, as the engine words it (berth
// reads the exit code from "Exited (N)").
func (c *simContainer) statusText(now time.Time) string {
	switch c.status {
	case container.StateRunning:
		return "Up " + ago(now.Sub(c.startedAt))
	case container.StatePaused:
		return "Up " + ago(now.Sub(c.startedAt)) + " (Paused)"
	case container.StateExited:
		return "Exited (" + strconv.Itoa(c.exitCode) + ") " + ago(now.Sub(c.finishedAt)) + " ago"
	}
	return "Created"
}

func ago(d time.Duration) string {
	return strconv.Itoa(int(d.Seconds())) + " seconds"
}
