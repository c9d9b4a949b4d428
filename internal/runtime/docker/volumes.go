package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

// Labels berth puts on the named volumes the engine makes for its
// containers. The engine applies a mount's volume labels only when it
// creates the volume, so a volume someone else made (an admin's shared
// data) never carries them and is never removed by berth; and a volume
// that exists keeps the labels of the container that made it, whatever
// the next one asks (checkNamedVolumes).
const (
	labelVolumeMadeBy  = "berth.volume"         // "true": berth's container made it
	labelVolumePersist = "berth.volume-persist" // "true": keep it after its last container
	// labelVolumeOwner: the owner's id on a volume scoped to its owner, ""
	// on a shared one; absent on volumes made before berth wrote it.
	labelVolumeOwner = "berth.volume-owner"
)

// namedVolumeOptions are the options of named volume v's mount for an
// instance of owner.
func namedVolumeOptions(v berth.Volume, owner string) *mount.VolumeOptions {
	return &mount.VolumeOptions{Labels: map[string]string{
		labelVolumeMadeBy: "true", labelVolumePersist: fmt.Sprint(v.Persist), labelVolumeOwner: volumeOwner(v, owner),
	}}
}

// volumeOwner is the owner label named volume v has for an instance of
// owner: none for a shared volume.
func volumeOwner(v berth.Volume, owner string) string {
	if v.Shared {
		return ""
	}
	return owner
}

// checkNamedVolumes refuses inst's create, permanently (runtime.ErrInvalid),
// when a named volume it mounts already exists and is not the volume the
// spec means (volumeMismatch): the container is never made, so nothing of
// the volume's owner is mounted or, with the container, removed. A volume
// that does not exist yet is made by the engine with inst's labels. Only
// a create that names the same volume can make it between this check and
// the engine's create: the same owner's, as the manager keeps shared names
// out of the scoped form (hostpolicy.CheckUnscopedVolumeName).
func checkNamedVolumes(ctx context.Context, h *host, inst berth.Instance) error {
	for _, v := range inst.Spec.Volumes {
		if (v.Type != berth.VolumeNamed && v.Type != "") || v.Source == "" {
			continue
		}
		res, err := h.cli.VolumeInspect(ctx, v.Source, client.VolumeInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return classify(err, "create", inst.ID, h.cfg.Name)
		}
		if err := volumeMismatch(res.Volume.Labels, v, inst.Owner); err != nil {
			return runtime.NewError(runtime.ErrInvalid, "create", inst.ID, h.cfg.Name, fmt.Errorf("volume %q: %w", v.Source, err))
		}
	}
	return nil
}

// volumeMismatch says why an existing volume with labels is not named
// volume v for an instance of owner (nil when it is):
//
//   - a volume berth scopes to one owner must be berth's: one without
//     berth's labels was made outside berth, for no owner it knows. A
//     shared volume may be such one (an admin's data), which berth never
//     removes;
//   - berth's volume must be for the same owner (scoped, the same id;
//     shared, none), so no owner's container mounts another's volume;
//   - and keep it as the template asks (persist): a volume that does not
//     persist is removed with the last container mounting it, so a
//     template asking to keep its data must not mount it, nor one that
//     does not persist a volume others keep.
//
// The messages name no owner: the caller may be the other one.
func volumeMismatch(labels map[string]string, v berth.Volume, owner string) error {
	if labels[labelVolumeMadeBy] != "true" {
		if v.Shared {
			return nil
		}
		return errors.New("exists but berth did not make it; berth mounts a volume scoped to one owner only if it made it for that owner")
	}
	if got, ok := labels[labelVolumeOwner]; ok && got != volumeOwner(v, owner) {
		return errors.New("berth made it for another owner (or as another template's shared volume); a volume of one owner is never mounted for another")
	}
	if got, want := labels[labelVolumePersist], fmt.Sprint(v.Persist); got != want {
		return fmt.Errorf("berth made it with persist %s and the template asks persist %s; it is mounted only as it was made, so its data is neither kept nor removed against its template", got, want)
	}
	return nil
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
