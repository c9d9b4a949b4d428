package manager

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
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
	stored, created, err := m.putTemplateWithLedger(ctx, t)
	var ve *ValidationError
	if errors.As(err, &ve) {
		return container.Template{}, false, err
	}
	if err != nil {
		return container.Template{}, false, fmt.Errorf("storing template %q: %w", t.Name, err)
	}
	m.templates.put(stored)
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
	m.templates.forget(name)
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

// validateTemplate checks a template as PutTemplate stores it: every rule
// of its own, once, and the configuration's (configRules), which every
// create checks again (create_check.go).
func (m *Manager) validateTemplate(t container.Template) error {
	var f fields
	validName(&f, "name", t.Name)
	if len(t.Description) > 1024 {
		f.add("description", "at most 1024 bytes")
	}
	m.configRules(&f, t)
	if t.Image == "" {
		f.add("image", "is required")
	} else if err := runvars.Check(t.Image); err != nil {
		f.add("image", "%v", err)
	} else {
		image, _ := runvars.Expand(t.Image, m.placeholders())
		validImage(&f, "image", image)
	}
	if !slices.Contains(pullPolicies, t.PullPolicy) {
		f.add("pull_policy", "must be one of %s", quoteList(pullPolicies))
	}
	for i, s := range t.Command {
		validArg(&f, fmt.Sprintf("command[%d]", i), s)
	}
	for i, s := range t.Args {
		validArg(&f, fmt.Sprintf("args[%d]", i), s)
	}
	if t.Workdir != "" {
		if err := runvars.Check(t.Workdir); err != nil {
			f.add("workdir", "%v", err)
		} else {
			workdir, _ := runvars.Expand(t.Workdir, m.placeholders())
			validWorkdir(&f, "workdir", workdir)
		}
	}
	validEnv(&f, "env", t.Env)
	validSecretEnv(&f, t)
	validLifetime(&f, t.Lifetime)
	validRetention(&f, t.Retention)
	validRestart(&f, t.Restart)
	for k, v := range t.Env {
		checkVars(&f, "env."+k, v)
	}
	for i, n := range t.UserEnv {
		if !envName.MatchString(n) {
			f.add(fmt.Sprintf("user_env[%d]", i), "invalid variable name")
		}
	}
	m.validateVolumes(&f, t.Volumes, nil)
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
	if t.Runtime == container.RuntimeDocker {
		dockerCannot(&f, t)
	}
	validLabels(&f, "labels", t.Labels)
	return f.err()
}

// dockerCannot refuses what a Docker host cannot honour, rather than
// accepting it and silently ignoring it: Kubernetes scheduling rules and
// persistent volume claims.
func dockerCannot(f *fields, t container.Template) {
	const why = "the docker runtime cannot honour this (Docker hosts are picked by scheduling.host_labels)"
	if len(t.Scheduling.NodeSelector) > 0 {
		f.add("scheduling.node_selector", "%s", why)
	}
	if len(t.Scheduling.Tolerations) > 0 {
		f.add("scheduling.tolerations", "%s", why)
	}
	if len(t.Scheduling.Constraints) > 0 {
		f.add("scheduling.constraints", "%s", why)
	}
	for i, v := range t.Volumes {
		if v.Type == container.VolumePVC {
			f.add(fmt.Sprintf("volumes[%d].type", i), "the docker runtime has no persistent volume claims: use %q (a named volume) or %q", container.VolumeNamed, container.VolumeBind)
		}
	}
}

// validImage checks an image reference against the distribution grammar
// the engine parses it with: a lower-case repository, an optional tag and
// an optional well-formed digest.
func validImage(f *fields, field, image string) {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		f.add(field, "not a valid image reference: %v", err)
	}
}

// validArg checks one command or args element: no NUL (a process argument
// cannot hold one) and only declared variables.
func validArg(f *fields, field, s string) {
	if noNUL(f, field, s) {
		checkVars(f, field, s)
	}
}

// noNUL reports whether s has no NUL byte, adding a field error if it has.
func noNUL(f *fields, field, s string) bool {
	if strings.ContainsRune(s, 0) {
		f.add(field, "must not contain NUL")
		return false
	}
	return true
}

// validWorkdir checks a working directory with its variables expanded.
func validWorkdir(f *fields, field, dir string) {
	switch {
	case strings.ContainsRune(dir, 0):
		f.add(field, "must not contain NUL")
	case !path.IsAbs(dir):
		f.add(field, "must be an absolute path")
	}
}

// placeholders stand in for runtime variables when a template is checked
// before any instance exists: path checks then see a plain name, and
// $WORKSPACE_PATH a workspace.
func (m *Manager) placeholders() map[string]string {
	vals := map[string]string{}
	for _, v := range runvars.Declared {
		vals[v.Name] = "x"
	}
	vals["WORKSPACE_PATH"] = m.workspacePath("x")
	return vals
}

func checkVars(f *fields, field, s string) {
	if err := runvars.Check(s); err != nil {
		f.add(field, "%v", err)
	}
}

// Volume names as the engine and Kubernetes accept them: Docker's local
// volume names, and DNS subdomains for claims.
var (
	dockerVolumeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`)
	claimName        = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

// validateVolumes checks every volume with variables expanded by values:
// at template time (values nil) with placeholders, at create time with the
// real values, so a variable can never move a bind mount outside the
// allowed roots or change the shape of its path.
func (m *Manager) validateVolumes(f *fields, vols []container.Volume, values map[string]string) {
	targets := map[string]string{}
	for i, v := range vols {
		field := fmt.Sprintf("volumes[%d]", i)
		target := m.validateVolume(f, field, v, values)
		if target == "" {
			continue
		}
		if first, dup := targets[target]; dup {
			f.add(field+".target", "%s already mounts %q", first, target)
		}
		targets[target] = field
	}
}

// validateVolume checks one volume and returns its clean target ("" when
// the target is invalid).
func (m *Manager) validateVolume(f *fields, field string, v container.Volume, values map[string]string) string {
	if !slices.Contains(volumeTypes, v.Type) {
		f.add(field+".type", "must be one of %s", quoteList(volumeTypes))
		return ""
	}
	if v.Persist && v.Type != container.VolumeNamed {
		f.add(field+".persist", "only a named volume (type %q) can persist: nothing else is removed with its container by berth", container.VolumeNamed)
	}
	if v.Shared && v.Type != container.VolumeNamed && v.Type != container.VolumeBind {
		f.add(field+".shared", "only a bind source or a named volume can be shared")
	}
	expandWith := values
	if expandWith == nil {
		expandWith = m.placeholders()
	}
	var clean string
	target, err := runvars.Expand(v.Target, expandWith)
	switch {
	case err != nil:
		f.add(field+".target", "%v", err)
	case !path.IsAbs(target):
		f.add(field+".target", "must be an absolute path")
	case strings.ContainsAny(target, ":,\x00"):
		f.add(field+".target", "must not contain ':', ',' or NUL")
	case path.Clean(target) == "/":
		f.add(field+".target", "must not be '/': a mount cannot replace the container's root")
	default:
		clean = path.Clean(target)
	}
	source, err := runvars.Expand(v.Source, expandWith)
	if err != nil {
		f.add(field+".source", "%v", err)
		return clean
	}
	checkVolumeOwners(f, field, v, source, values == nil)
	switch v.Type {
	case container.VolumeBind:
		m.validateBindSource(f, field+".source", v, source, values != nil)
		if strings.Contains(values["USERID"], "%") && (strings.Contains(v.Source, "$USERID") || strings.Contains(v.Source, "${USERID}")) {
			// $WORKSPACE_PATH writes a user id's unsafe bytes as %XX, so
			// a raw id with '%' could be another user's workspace element;
			// without '%', a raw id never is (docs/architecture.md).
			f.add(field+".source", "a user id with '%%' cannot name a host path through $USERID: it could name another user's workspace; use $WORKSPACE_PATH")
		}
	case container.VolumeNamed:
		if !dockerVolumeName.MatchString(source) {
			f.add(field+".source", "must be a volume name: letters, digits, '_', '.' or '-', starting with a letter or digit")
		}
	case container.VolumePVC:
		if !claimName.MatchString(source) {
			f.add(field+".source", "must be a claim name: lower-case letters, digits, '-' or '.', starting and ending with a letter or digit")
		}
	case container.VolumeEmptyDir:
		if source != "" {
			f.add(field+".source", "must be empty for empty_dir")
		}
	}
	return clean
}

// validateBindSource checks a bind source's pattern and, expanded, that it
// lies inside the allowed roots; at create (resolved) also that the real
// values kept the pattern's shape.
func (m *Manager) validateBindSource(f *fields, field string, v container.Volume, source string, resolved bool) {
	p, err := hostpolicy.Parse(v.Source, m.workspaceRoot)
	if err != nil {
		f.add(field, "%v", err)
		return
	}
	if resolved {
		if err := p.Check(source); err != nil {
			f.add(field, "%v", err)
			return
		}
	}
	if clean := path.Clean(source); !hostpolicy.Under(clean, m.bindRoots) {
		f.add(field, "must be inside the allowed bind roots (%s)", quoteList(m.bindRoots))
	}
}

func validResources(f *fields, r container.Resources) {
	if _, err := container.ParseCPU(r.CPU); err != nil {
		f.add("resources.cpu", "%v", err)
	}
	if _, err := container.ParseMemory(r.Memory); err != nil {
		f.add("resources.memory", "%v", err)
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
