package docker

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
)

func TestCreateOptions(t *testing.T) {
	inst := berth.Instance{
		ID: "01JTEST", Owner: "alice", Template: "jupyter", Group: "g1",
		Labels: map[string]string{"berth.instance-id": "forged", "app": "nb"},
		Spec: berth.Spec{
			Image:   "registry.example/jupyter:1",
			Command: []string{"start-notebook"},
			Args:    []string{"--port", "8888"},
			Workdir: "/home/alice",
			Env:     map[string]string{"TOKEN": "s3cret", "A": "1"},
			Volumes: []berth.Volume{
				{Type: berth.VolumeBind, Source: "/srv/work/alice", Target: "/work"},
				{Type: berth.VolumeNamed, Source: "cache", Target: "/cache", ReadOnly: true},
				{Type: berth.VolumeEmptyDir, Target: "/scratch"},
			},
			Ports:     []berth.Port{{ContainerPort: 8888}, {ContainerPort: 53, Protocol: "UDP"}},
			Resources: berth.Resources{CPU: "500m", Memory: "256Mi", GPUs: 1},
		},
	}
	hc := config.DockerHost{Name: "h1", AllowedBindRoots: []string{"/srv/work"}, NetworkMode: "bridge"}
	opts, err := createOptions(inst, hc, "prod")
	if err != nil {
		t.Fatal(err)
	}
	cfg, hcfg := opts.Config, opts.HostConfig
	if opts.Name != "berth-01JTEST" {
		t.Errorf("name = %q", opts.Name)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"start-notebook"}) || !slices.Equal(cfg.Cmd, []string{"--port", "8888"}) {
		t.Errorf("entrypoint/cmd = %v / %v", cfg.Entrypoint, cfg.Cmd)
	}
	if !slices.Equal(cfg.Env, []string{"A=1", "TOKEN=s3cret"}) || cfg.WorkingDir != "/home/alice" {
		t.Errorf("env/workdir = %v / %q", cfg.Env, cfg.WorkingDir)
	}
	if cfg.Labels["berth.instance-id"] != "01JTEST" || cfg.Labels["app"] != "nb" || cfg.Labels["berth.scope"] != "prod" {
		t.Errorf("labels = %v", cfg.Labels)
	}
	if !slices.Equal(hcfg.Binds, []string{"/srv/work/alice:/work"}) {
		t.Errorf("binds = %v", hcfg.Binds)
	}
	wantMounts := []mount.Mount{
		{Type: mount.TypeVolume, Source: "cache", Target: "/cache", ReadOnly: true},
		{Type: mount.TypeVolume, Target: "/scratch"},
	}
	// A named volume's mount carries berth's labels (volumes.go), compared
	// apart: they are behind a pointer.
	if !slices.EqualFunc(hcfg.Mounts, wantMounts, func(a, b mount.Mount) bool { a.VolumeOptions = nil; return a == b }) {
		t.Errorf("mounts = %+v", hcfg.Mounts)
	}
	if vo := hcfg.Mounts[0].VolumeOptions; vo == nil || vo.Labels["berth.volume"] != "true" || vo.Labels["berth.volume-persist"] != "false" {
		t.Errorf("the named volume's options = %+v, want berth's labels", vo)
	}
	if hcfg.NanoCPUs != 500_000_000 || hcfg.Memory != 256<<20 || hcfg.MemorySwap != 256<<20 {
		t.Errorf("cpu/memory/swap = %d/%d/%d", hcfg.NanoCPUs, hcfg.Memory, hcfg.MemorySwap)
	}
	if len(hcfg.DeviceRequests) != 1 || hcfg.DeviceRequests[0].Count != 1 || hcfg.DeviceRequests[0].Capabilities[0][0] != "gpu" {
		t.Errorf("device requests = %+v", hcfg.DeviceRequests)
	}
	if hcfg.NetworkMode != "bridge" || hcfg.RestartPolicy.Name != container.RestartPolicyDisabled {
		t.Errorf("network/restart = %q/%q", hcfg.NetworkMode, hcfg.RestartPolicy.Name)
	}
	tcp, udp := network.MustParsePort("8888/tcp"), network.MustParsePort("53/udp")
	if _, ok := cfg.ExposedPorts[tcp]; !ok {
		t.Errorf("exposed = %v", cfg.ExposedPorts)
	}
	if _, ok := cfg.ExposedPorts[udp]; !ok {
		t.Errorf("exposed = %v", cfg.ExposedPorts)
	}
	if len(hcfg.PortBindings[tcp]) != 1 || len(hcfg.PortBindings[udp]) != 1 {
		t.Errorf("port bindings = %v", hcfg.PortBindings)
	}

	// Without a network to publish on, ports are only exposed.
	hc.NetworkMode = "none"
	opts, err = createOptions(inst, hc, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.HostConfig.PortBindings) != 0 || len(opts.Config.ExposedPorts) != 2 {
		t.Errorf("network none: bindings %v exposed %v", opts.HostConfig.PortBindings, opts.Config.ExposedPorts)
	}
	if _, ok := opts.Config.Labels["berth.scope"]; ok {
		t.Error("scope label without a scope")
	}
}

func TestCreateOptionsRefuses(t *testing.T) {
	base := func() berth.Instance {
		return berth.Instance{ID: "01JTEST", Spec: berth.Spec{Image: "busybox", Env: map[string]string{"PASSWORD": "hunter2"}}}
	}
	hc := config.DockerHost{Name: "h1", AllowedBindRoots: []string{"/srv/work"}}
	tests := []struct {
		name   string
		change func(*berth.Instance)
		want   string
	}{
		{"bind outside roots", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "bind", Source: "/etc", Target: "/x"}}
		}, "outside the allowed roots"},
		{"bind escaping with ..", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "bind", Source: "/srv/work/../../etc", Target: "/x"}}
		}, "outside the allowed roots"},
		{"bind sibling prefix", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "bind", Source: "/srv/workshop", Target: "/x"}}
		}, "outside the allowed roots"},
		{"relative bind", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "bind", Source: "data", Target: "/x"}}
		}, "absolute host path"},
		{"relative target", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "volume", Source: "v", Target: "x"}}
		}, "absolute path"},
		{"pvc", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: "pvc", Source: "claim", Target: "/x"}}
		}, "kubernetes"},
		{"bad cpu", func(i *berth.Instance) { i.Spec.Resources.CPU = "lots" }, "cpu"},
		{"bad memory", func(i *berth.Instance) { i.Spec.Resources.Memory = "1e3Mi" }, "memory"},
		{"bad port", func(i *berth.Instance) { i.Spec.Ports = []berth.Port{{ContainerPort: 70000}} }, "out of range"},
		{"bad protocol", func(i *berth.Instance) { i.Spec.Ports = []berth.Port{{ContainerPort: 80, Protocol: "icmp"}} }, "protocol"},
		{"negative gpus", func(i *berth.Instance) { i.Spec.Resources.GPUs = -1 }, "gpus"},
		{"no image", func(i *berth.Instance) { i.Spec.Image = "" }, "no image"},
		{"bad id", func(i *berth.Instance) { i.ID = "../x" }, "cannot name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := base()
			tt.change(&inst)
			_, err := createOptions(inst, hc, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatal("an env value leaked into an error")
			}
		})
	}
}
