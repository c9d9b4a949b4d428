package dockersim

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

var (
	anyV4 = netip.MustParseAddr("0.0.0.0")
	anyV6 = netip.MustParseAddr("::")
)

// engineTime is the engine's time format; the zero time is written as it
// writes "never".
func engineTime(t time.Time) string {
	if t.IsZero() {
		return "0001-01-01T00:00:00Z"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// inspect is the container as GET /containers/{id}/json shows it. The
// caller holds h.mu.
func (c *simContainer) inspect() container.InspectResponse {
	cfg := c.config
	hostCfg := c.hostCfg
	res := container.InspectResponse{
		ID: c.id, Name: "/" + c.name, Created: engineTime(c.created), Image: "sha256:" + c.id,
		Path: first(cfg.Entrypoint), Args: rest(cfg.Entrypoint),
		State: &container.State{
			Status: c.status, Running: c.running(), Paused: c.status == container.StatePaused,
			ExitCode: c.exitCode, StartedAt: engineTime(c.startedAt), FinishedAt: engineTime(c.finishedAt),
		},
		Config: &cfg, HostConfig: &hostCfg, Driver: "overlay2", Platform: "linux",
		NetworkSettings: &container.NetworkSettings{},
		Mounts:          c.mountPoints(),
	}
	if c.running() {
		res.State.Pid = 1
		res.NetworkSettings.Ports = c.ports
	}
	return res
}

// mountPoints are the container's mounts as inspect lists them: binds and
// anonymous volumes (the simulation makes no named volume).
func (c *simContainer) mountPoints() []container.MountPoint {
	var out []container.MountPoint
	for _, b := range c.hostCfg.Binds {
		parts := strings.Split(b, ":")
		if len(parts) < 2 {
			continue
		}
		out = append(out, container.MountPoint{Type: mount.TypeBind, Source: parts[0], Destination: parts[1],
			RW: !slices.Contains(parts[2:], "ro")})
	}
	for _, m := range c.hostCfg.Mounts {
		out = append(out, container.MountPoint{Type: m.Type, Source: m.Source, Destination: m.Target, RW: !m.ReadOnly})
	}
	return out
}

// summary is the container as GET /containers/json lists it.
func (c *simContainer) summary(now time.Time) container.Summary {
	s := container.Summary{
		ID: c.id, Names: []string{"/" + c.name}, Image: c.config.Image, ImageID: "sha256:" + c.id,
		Command: strings.Join(append(slices.Clone(c.config.Entrypoint), c.config.Cmd...), " "),
		Created: c.created.Unix(), Labels: c.config.Labels, State: c.status, Status: c.statusText(now),
	}
	s.HostConfig.NetworkMode = string(c.hostCfg.NetworkMode)
	if c.running() {
		for port, bs := range c.ports {
			for _, b := range bs {
				hp, _ := strconv.Atoi(b.HostPort)
				s.Ports = append(s.Ports, container.PortSummary{IP: b.HostIP, PrivatePort: port.Num(),
					PublicPort: uint16(hp), Type: string(port.Proto())})
			}
		}
	}
	return s
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func rest(s []string) []string {
	if len(s) < 2 {
		return nil
	}
	return s[1:]
}
