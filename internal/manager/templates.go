package manager

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/runvars"
	"github.com/berth-io/berth/internal/store"
)

// PutTemplate validates and stores a template (admins only). created
// reports whether it is new.
func (m *Manager) PutTemplate(ctx context.Context, c identity.Caller, t container.Template) (container.Template, bool, error) {
	if !c.Admin {
		return container.Template{}, false, fmt.Errorf("writing templates is for admins: %w", ErrForbidden)
	}
	if t.PullPolicy == "" {
		t.PullPolicy = container.PullIfNotPresent
	}
	for i := range t.Ports {
		if t.Ports[i].Protocol == "" {
			t.Ports[i].Protocol = "tcp"
		}
	}
	if err := m.validateTemplate(t); err != nil {
		return container.Template{}, false, err
	}
	t.Version = 0
	t.UpdatedAt = ""
	stored, created, err := m.store.PutTemplate(ctx, t)
	if err != nil {
		return container.Template{}, false, fmt.Errorf("storing template %q: %w", t.Name, err)
	}
	m.log.InfoContext(ctx, "template stored", "template", t.Name, "created", created, "by", c.User)
	return stored, created, nil
}

// GetTemplate returns a template; every user may read templates.
func (m *Manager) GetTemplate(ctx context.Context, name string) (container.Template, error) {
	if !dnsLabel.MatchString(name) {
		return container.Template{}, fmt.Errorf("template %.64q: %w", name, ErrNotFound)
	}
	t, err := m.store.GetTemplate(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return t, fmt.Errorf("template %q: %w", name, ErrNotFound)
	}
	return t, err
}

// ListTemplates returns every template by name.
func (m *Manager) ListTemplates(ctx context.Context) ([]container.Template, error) {
	return m.store.ListTemplates(ctx)
}

// DeleteTemplate removes a template (admins only). Existing instances keep
// their resolved spec.
func (m *Manager) DeleteTemplate(ctx context.Context, c identity.Caller, name string) error {
	if !c.Admin {
		return fmt.Errorf("deleting templates is for admins: %w", ErrForbidden)
	}
	if !dnsLabel.MatchString(name) {
		return fmt.Errorf("template %.64q: %w", name, ErrNotFound)
	}
	err := m.store.DeleteTemplate(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("template %q: %w", name, ErrNotFound)
	}
	if err == nil {
		m.log.InfoContext(ctx, "template deleted", "template", name, "by", c.User)
	}
	return err
}

var (
	pullPolicies = []string{container.PullIfNotPresent, container.PullAlways, container.PullNever}
	volumeTypes  = []string{container.VolumeBind, container.VolumeNamed, container.VolumePVC, container.VolumeEmptyDir}
	protocols    = []string{"tcp", "udp", "sctp"}
	operators    = []string{"In", "NotIn", "Exists", "DoesNotExist"}
)

func (m *Manager) validateTemplate(t container.Template) error {
	var f fields
	validName(&f, "name", t.Name)
	if len(t.Description) > 1024 {
		f.add("description", "at most 1024 bytes")
	}
	if !slices.Contains(m.runtimes, t.Runtime) {
		f.add("runtime", "must be one of %s", quoteList(m.runtimes))
	}
	if t.Image == "" {
		f.add("image", "is required")
	} else if !imageRef.MatchString(t.Image) {
		f.add("image", "must not contain white space")
	}
	checkVars(&f, "image", t.Image)
	if !slices.Contains(pullPolicies, t.PullPolicy) {
		f.add("pull_policy", "must be one of %s", quoteList(pullPolicies))
	}
	for i, s := range t.Command {
		checkVars(&f, fmt.Sprintf("command[%d]", i), s)
	}
	for i, s := range t.Args {
		checkVars(&f, fmt.Sprintf("args[%d]", i), s)
	}
	if t.Workdir != "" && !strings.HasPrefix(t.Workdir, "/") && !strings.HasPrefix(t.Workdir, "$") {
		f.add("workdir", "must be an absolute path")
	}
	checkVars(&f, "workdir", t.Workdir)
	validEnv(&f, "env", t.Env)
	for k, v := range t.Env {
		checkVars(&f, "env."+k, v)
	}
	for i, n := range t.UserEnv {
		if !envName.MatchString(n) {
			f.add(fmt.Sprintf("user_env[%d]", i), "invalid variable name")
		}
	}
	for i, v := range t.Volumes {
		m.validateVolume(&f, fmt.Sprintf("volumes[%d]", i), v, placeholderValues)
	}
	for i, p := range t.Ports {
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			f.add(fmt.Sprintf("ports[%d].container_port", i), "must be 1-65535")
		}
		if !slices.Contains(protocols, p.Protocol) {
			f.add(fmt.Sprintf("ports[%d].protocol", i), "must be one of %s", quoteList(protocols))
		}
	}
	validResources(&f, t.Resources)
	validScheduling(&f, t.Scheduling)
	validLabels(&f, "labels", t.Labels)
	return f.err()
}

// placeholderValues stands in for runtime variables when a template is
// checked before any instance exists: path checks then see a plain name.
var placeholderValues = func() map[string]string {
	m := map[string]string{}
	for _, v := range runvars.Declared {
		m[v.Name] = "x"
	}
	return m
}()

func checkVars(f *fields, field, s string) {
	if err := runvars.Check(s); err != nil {
		f.add(field, "%v", err)
	}
}

// validateVolume checks a volume with variables expanded by values: at
// template time with placeholders, at create time with the real values, so
// a variable can never move a bind mount outside the allowed roots.
func (m *Manager) validateVolume(f *fields, field string, v container.Volume, values map[string]string) {
	if !slices.Contains(volumeTypes, v.Type) {
		f.add(field+".type", "must be one of %s", quoteList(volumeTypes))
		return
	}
	target, err := runvars.Expand(v.Target, values)
	if err != nil {
		f.add(field+".target", "%v", err)
	} else if !path.IsAbs(target) {
		f.add(field+".target", "must be an absolute path")
	}
	source, err := runvars.Expand(v.Source, values)
	if err != nil {
		f.add(field+".source", "%v", err)
		return
	}
	switch v.Type {
	case container.VolumeBind:
		if !path.IsAbs(source) {
			f.add(field+".source", "must be an absolute path")
		} else if clean := path.Clean(source); clean != strings.TrimSuffix(source, "/") || !underRoots(clean, m.bindRoots) {
			f.add(field+".source", "must be a clean path inside the allowed bind roots (%s)", quoteList(m.bindRoots))
		}
	case container.VolumeNamed, container.VolumePVC:
		if source == "" || strings.Contains(source, "/") {
			f.add(field+".source", "must be a volume name")
		}
	case container.VolumeEmptyDir:
		if source != "" {
			f.add(field+".source", "must be empty for empty_dir")
		}
	}
}

func validResources(f *fields, r container.Resources) {
	if r.CPU != "" {
		if q, err := resource.ParseQuantity(r.CPU); err != nil || q.Sign() <= 0 {
			f.add("resources.cpu", "must be a positive quantity such as 0.5 or 500m")
		}
	}
	if r.Memory != "" {
		if q, err := resource.ParseQuantity(r.Memory); err != nil || q.Value() < 4<<20 {
			f.add("resources.memory", "must be a quantity of at least 4Mi, such as 256Mi or 1Gi")
		}
	}
	if r.GPUs < 0 || r.GPUs > 16 {
		f.add("resources.gpus", "must be 0-16")
	}
}

func validScheduling(f *fields, s container.Scheduling) {
	for k, v := range s.HostLabels {
		checkVars(f, "scheduling.host_labels."+k, v)
	}
	for k, v := range s.NodeSelector {
		checkVars(f, "scheduling.node_selector."+k, v)
	}
	for i, c := range s.Constraints {
		if c.Key == "" {
			f.add(fmt.Sprintf("scheduling.constraints[%d].key", i), "is required")
		}
		if !slices.Contains(operators, c.Operator) {
			f.add(fmt.Sprintf("scheduling.constraints[%d].operator", i), "must be one of %s", quoteList(operators))
		}
		for j, v := range c.Values {
			checkVars(f, fmt.Sprintf("scheduling.constraints[%d].values[%d]", i, j), v)
		}
	}
	for i, t := range s.Tolerations {
		if t.Operator != "" && t.Operator != "Equal" && t.Operator != "Exists" {
			f.add(fmt.Sprintf("scheduling.tolerations[%d].operator", i), "must be Equal or Exists")
		}
	}
}
