package runtime

import (
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// Labels berth puts on every runtime object it makes. The "berth." prefix is
// reserved: template and instance labels under it are dropped, so a user can
// neither disguise a container as another instance nor hide it from List.
const (
	ReservedLabelPrefix = "berth."
	LabelManaged        = "berth.managed" // always "true": what List and Watch filter on
	LabelInstanceID     = "berth.instance-id"
	LabelOwner          = "berth.owner"
	LabelTemplate       = "berth.template"
	LabelGroup          = "berth.group"
	// LabelScope separates berth deployments (or test runs) sharing a node:
	// a runtime with a scope lists, counts and watches only its own.
	LabelScope = "berth.scope"
)

// Labels returns the labels for inst's object: the instance's own, then the
// spec's (the template's win over the user's), then berth's, which no label
// can override.
func Labels(inst container.Instance, scope string) map[string]string {
	out := make(map[string]string, len(inst.Spec.Labels)+len(inst.Labels)+6)
	// The spec's labels come last: they hold the template's, which win
	// over the user's.
	for _, m := range []map[string]string{inst.Labels, inst.Spec.Labels} {
		for k, v := range m {
			if !strings.HasPrefix(k, ReservedLabelPrefix) {
				out[k] = v
			}
		}
	}
	out[LabelManaged] = "true"
	out[LabelInstanceID] = inst.ID
	out[LabelOwner] = inst.Owner
	out[LabelTemplate] = inst.Template
	out[LabelGroup] = inst.Group
	if scope != "" {
		out[LabelScope] = scope
	}
	return out
}

// Owns reports whether an object with these labels is inst's object under
// scope: what lets Create adopt an object an earlier attempt made.
func Owns(labels map[string]string, instanceID, scope string) bool {
	if labels[LabelManaged] != "true" || labels[LabelInstanceID] != instanceID {
		return false
	}
	return labels[LabelScope] == scope
}
