package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/runvars"
)

// A create is checked here, in one pass, after its template was checked
// once when it was stored (PutTemplate: validateTemplate; every template
// is stored through it). The pass checks:
//
//   - the create's own inputs (checkRequest): template named, name,
//     labels, group, env;
//   - what the configuration decides, which may have changed since the
//     template was stored (configRules: the runtime is still in
//     container.allowed_runtimes and, where the nodes are known, has a node
//     with the template's literal host_labels);
//   - the bind ledger (checkLedgerAtCreate), which other templates change;
//   - the resolved spec (resolveSpec): that the user sets only user_env
//     variables, and what the real values made of the image, workdir,
//     command, args and volumes. Volumes are checked here with the real
//     values only: bind roots and the workspace root are configuration
//     too, and a value ($USERID, $CONTAINER_NAME) must keep a bind source
//     inside its roots and its pattern's shape.
//
// Every other rule is the template's own and is not run again.

// checkRequest checks the create's own inputs, before its template is read.
func checkRequest(req CreateRequest) error {
	var f fields
	if req.Template == "" {
		f.add("template", "is required")
	}
	if req.Name != "" {
		validName(&f, "name", req.Name)
	}
	validLabels(&f, "labels", req.Labels)
	validGroup(&f, "group", req.Group)
	validEnv(&f, "env", req.Env)
	return f.err()
}

// configRules are a template's rules that the configuration decides: the
// runtime is allowed and, where the nodes are known, has a node
// (validateNodes). PutTemplate checks them, and every create again.
func (m *Manager) configRules(f *fields, t container.Template) {
	if !slices.Contains(m.runtimes, t.Runtime) {
		f.add("runtime", "must be one of %s", quoteList(m.runtimes))
	}
	m.validateNodes(f, t)
}

// checkCreate is the create's pass over its template and the instance it
// is about to write (inst, without its spec): it returns the resolved spec.
func (m *Manager) checkCreate(ctx context.Context, tpl container.Template, inst container.Instance, userEnv map[string]string) (container.Spec, error) {
	var f fields
	m.configRules(&f, tpl)
	err := f.err()
	if err == nil {
		err = m.checkLedgerAtCreate(ctx, tpl)
	}
	if err != nil {
		// A template stored before a config change (a runtime switched off,
		// a node removed) or beside one whose writable bind source may
		// contain its own (two racing writes, or stored before that rule)
		// is refused rather than half-applied.
		return container.Spec{}, fmt.Errorf("template %q is no longer valid here: %w", tpl.Name, err)
	}
	return m.resolveSpec(tpl, inst, userEnv)
}

// resolveSpec merges the template with the user's request and expands the
// runtime variables. User env values are taken literally: only names the
// template lists in user_env are accepted, and they win over the template.
func (m *Manager) resolveSpec(t container.Template, inst container.Instance, userEnv map[string]string) (container.Spec, error) {
	var f fields
	values := map[string]string{
		"USERID":         inst.Owner,
		"WORKSPACE_PATH": m.workspacePath(inst.Owner),
		"CONTAINER_ID":   inst.ID,
		"CONTAINER_NAME": inst.Name,
		"TEMPLATE":       t.Name,
		"GROUP":          inst.Group,
		"RUNTIME":        t.Runtime,
	}
	expand := func(field, s string) string {
		out, err := runvars.Expand(s, values)
		if err != nil {
			f.add(field, "%v", err)
		}
		return out
	}
	expandAll := func(field string, xs []string) []string {
		if xs == nil {
			return nil
		}
		out := make([]string, len(xs))
		for i, s := range xs {
			out[i] = expand(fmt.Sprintf("%s[%d]", field, i), s)
		}
		return out
	}
	expandMap := func(field string, in map[string]string) map[string]string {
		if in == nil {
			return nil
		}
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[k] = expand(field+"."+k, v)
		}
		return out
	}

	spec := container.Spec{
		Runtime:    t.Runtime,
		Image:      expand("image", t.Image),
		PullPolicy: t.PullPolicy,
		Command:    expandAll("command", t.Command),
		Args:       expandAll("args", t.Args),
		Workdir:    expand("workdir", t.Workdir),
		Env:        expandMap("env", t.Env),
		SecretEnv:  maps.Clone(t.SecretEnv),
		Ports:      slices.Clone(t.Ports),
		Resources:  t.Resources,
	}
	for k, v := range userEnv {
		if !slices.Contains(t.UserEnv, k) {
			f.add("env."+k, "template %q does not let users set this variable (settable: %s)", t.Name, quoteList(t.UserEnv))
			continue
		}
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	m.validateVolumes(&f, t.Volumes, values)
	for i, v := range t.Volumes {
		field := fmt.Sprintf("volumes[%d]", i)
		source := expand(field+".source", v.Source)
		if v.Type == container.VolumeNamed && !v.Shared {
			// Owner isolation: each owner gets a volume of their own.
			source = hostpolicy.ScopedVolumeName(source, inst.Owner)
		}
		spec.Volumes = append(spec.Volumes, container.Volume{
			Source: source, Target: expand(field+".target", v.Target),
			ReadOnly: v.ReadOnly, Type: v.Type, Shared: v.Shared, Persist: v.Persist,
		})
	}
	spec.Scheduling = container.Scheduling{
		HostLabels:   expandMap("scheduling.host_labels", t.Scheduling.HostLabels),
		NodeSelector: expandMap("scheduling.node_selector", t.Scheduling.NodeSelector),
		Tolerations:  slices.Clone(t.Scheduling.Tolerations),
	}
	for i, c := range t.Scheduling.Constraints {
		spec.Scheduling.Constraints = append(spec.Scheduling.Constraints, container.Constraint{
			Key: c.Key, Operator: c.Operator, Values: expandAll(fmt.Sprintf("scheduling.constraints[%d].values", i), c.Values),
		})
	}
	// The template's labels win over the user's: an admin's label (a cost
	// centre, a policy selector) is not the user's to replace.
	var labels map[string]string
	if len(t.Labels)+len(inst.Labels) > 0 {
		labels = maps.Clone(inst.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, t.Labels)
	}
	spec.Labels = labels
	// What the variables' values made of the paths and the image is
	// checked as the template was, so the engine never sees it first.
	if spec.Image == "" {
		f.add("image", "the template's image expands to nothing")
	} else {
		validImage(&f, "image", spec.Image)
	}
	if spec.Workdir != "" {
		validWorkdir(&f, "workdir", spec.Workdir)
	}
	for i, s := range spec.Command {
		noNUL(&f, fmt.Sprintf("command[%d]", i), s)
	}
	for i, s := range spec.Args {
		noNUL(&f, fmt.Sprintf("args[%d]", i), s)
	}
	return spec, f.err()
}
