package docker

import (
	"context"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Labels berth puts on the named volumes the engine makes for its
// containers. The engine applies a mount's volume labels only when it
// creates the volume, so a volume someone else made (an admin's shared
// data) never carries them and is never removed by berth.
const (
	labelVolumeMadeBy  = "berth.volume"         // "true": berth's container made it
	labelVolumePersist = "berth.volume-persist" // "true": keep it after its last container
)

// namedVolumeOptions are the options of a named volume's mount.
func namedVolumeOptions(persist bool) *mount.VolumeOptions {
	p := "false"
	if persist {
		p = "true"
	}
	return &mount.VolumeOptions{Labels: map[string]string{labelVolumeMadeBy: "true", labelVolumePersist: p}}
}

// namedVolumes returns the named volumes a container mounts (anonymous
// ones, empty_dir, go with the container's removal).
func namedVolumes(ctx context.Context, h *host, name string) []string {
	res, err := h.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return nil
	}
	anon := map[string]bool{}
	if res.Container.HostConfig != nil {
		for _, m := range res.Container.HostConfig.Mounts {
			if m.Type == mount.TypeVolume && m.Source == "" {
				anon[m.Target] = true
			}
		}
	}
	var out []string
	for _, m := range res.Container.Mounts {
		if m.Type == mount.TypeVolume && m.Name != "" && !anon[m.Destination] {
			out = append(out, m.Name)
		}
	}
	return out
}

// removeMadeVolumes removes the named volumes berth's containers made and
// no template asked to persist, once no container uses them: the engine
// refuses to remove a volume in use (a conflict), which leaves it to the
// last container's delete. Failures leave the volume behind; they never
// fail the delete.
func removeMadeVolumes(ctx context.Context, h *host, names []string) {
	for _, n := range names {
		v, err := h.cli.VolumeInspect(ctx, n, client.VolumeInspectOptions{})
		if err != nil || v.Volume.Labels[labelVolumeMadeBy] != "true" || v.Volume.Labels[labelVolumePersist] == "true" {
			continue
		}
		// Without Force: the engine refuses while a container uses it.
		_, _ = h.cli.VolumeRemove(ctx, n, client.VolumeRemoveOptions{})
	}
}
