package docker

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// validID keeps instance ids usable in container names (ULIDs are).
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// imageOf is the image an instance runs: its frozen spec's, else the one
// recorded on the instance.
func imageOf(inst berth.Instance) string {
	if inst.Spec.Image != "" {
		return inst.Spec.Image
	}
	return inst.Image
}

// createOptions turns an instance into the Engine API create request for
// host hc. It only computes; errors are about the request (invalid) and name
// no env values.
func createOptions(inst berth.Instance, hc config.DockerHost, scope string) (client.ContainerCreateOptions, error) {
	spec := inst.Spec
	if !validID.MatchString(inst.ID) {
		return client.ContainerCreateOptions{}, fmt.Errorf("instance id %q cannot name a container", inst.ID)
	}
	image := imageOf(inst)
	if image == "" {
		return client.ContainerCreateOptions{}, fmt.Errorf("no image")
	}
	cfg := &container.Config{
		Image: image,
		// Kubernetes' meaning, which templates follow: command replaces
		// the image's entrypoint, args its cmd. Docker drops the image's
		// cmd when the entrypoint is given, as Kubernetes does.
		Entrypoint: slices.Clone(spec.Command),
		Cmd:        slices.Clone(spec.Args),
		WorkingDir: spec.Workdir,
		Env:        envList(spec.Env),
		Labels:     runtime.Labels(inst, scope),
	}
	hostCfg := &container.HostConfig{
		NetworkMode: container.NetworkMode(hc.NetworkMode),
		// berth decides about restarts, through its own state machine.
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}

	ms, binds, err := mounts(spec.Volumes, inst.Owner, hc.AllowedBindRoots)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	hostCfg.Mounts, hostCfg.Binds = ms, binds

	if err := setPorts(cfg, hostCfg, spec.Ports); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if err := setResources(&hostCfg.Resources, spec.Resources); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	return client.ContainerCreateOptions{
		Name:       runtime.ObjectName(inst.ID),
		Config:     cfg,
		HostConfig: hostCfg,
	}, nil
}

// envList renders env sorted, so the same spec makes the same container.
func envList(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// setPorts exposes each port and publishes it on a host port the engine
// picks, except where the network mode has no ports to publish (none, host,
// another container's), where it is only exposed.
func setPorts(cfg *container.Config, hostCfg *container.HostConfig, ports []berth.Port) error {
	if len(ports) == 0 {
		return nil
	}
	mode := hostCfg.NetworkMode
	publish := !mode.IsNone() && !mode.IsHost() && !mode.IsContainer()
	cfg.ExposedPorts = network.PortSet{}
	if publish {
		hostCfg.PortBindings = network.PortMap{}
	}
	for _, p := range ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			return fmt.Errorf("port %d: out of range", p.ContainerPort)
		}
		port, ok := network.PortFrom(uint16(p.ContainerPort), network.IPProtocol(proto))
		if !ok || (proto != "tcp" && proto != "udp" && proto != "sctp") {
			return fmt.Errorf("port %d/%s: unknown protocol", p.ContainerPort, p.Protocol)
		}
		cfg.ExposedPorts[port] = struct{}{}
		if publish {
			hostCfg.PortBindings[port] = []network.PortBinding{{}}
		}
	}
	return nil
}

// setResources maps CPU, memory and GPUs.
func setResources(res *container.Resources, r berth.Resources) error {
	milli, err := berth.ParseCPU(r.CPU)
	if err != nil {
		return err
	}
	mem, err := berth.ParseMemory(r.Memory)
	if err != nil {
		return err
	}
	res.NanoCPUs = milli * 1_000_000
	if mem > 0 {
		res.Memory = mem
		// No swap beyond the limit: the limit means what it says, and an
		// overrun ends in an OOM kill the runtime reports.
		res.MemorySwap = mem
	}
	switch {
	case r.GPUs < 0:
		return fmt.Errorf("gpus %d: want zero or more", r.GPUs)
	case r.GPUs > 0:
		// What `docker run --gpus N` sends: any driver that offers "gpu".
		res.DeviceRequests = []container.DeviceRequest{{Count: r.GPUs, Capabilities: [][]string{{"gpu"}}}}
	}
	return nil
}
