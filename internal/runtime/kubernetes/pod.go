package kubernetes

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/runtime"
)

// containerName is the name of the Pod's one container.
const containerName = "main"

// GPUResource is the extended resource a template's resources.gpus asks
// for: the NVIDIA device plugin's.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// podFor renders inst's frozen spec as the Pod for cluster cc. Errors are
// about the request (invalid): no retry makes them pass.
func podFor(inst berth.Instance, cc config.KubernetesCluster, scope, pullSecret string) (*corev1.Pod, error) {
	spec := inst.Spec
	if inst.ID == "" {
		return nil, fmt.Errorf("no instance id")
	}
	image := spec.Image
	if image == "" {
		return nil, fmt.Errorf("no image")
	}
	labels, annotations, err := podLabels(runtime.Labels(inst, scope))
	if err != nil {
		return nil, err
	}
	c := corev1.Container{
		Name: containerName,
		// Templates follow Kubernetes' meaning: command replaces the
		// image's entrypoint, args its cmd.
		Image:           image,
		Command:         slices.Clone(spec.Command),
		Args:            slices.Clone(spec.Args),
		WorkingDir:      spec.Workdir,
		Env:             envVars(spec.Env),
		ImagePullPolicy: pullPolicy(spec.PullPolicy),
		SecurityContext: containerSecurity(),
		// The kubelet's message file: where an exit reason can be read.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if c.Ports, err = ports(spec.Ports); err != nil {
		return nil, err
	}
	if c.Resources, err = resources(spec.Resources); err != nil {
		return nil, err
	}
	vols, mounts, err := volumes(spec.Volumes, cc.AllowedHostPathRoots)
	if err != nil {
		return nil, err
	}
	c.VolumeMounts = mounts
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        podName(inst.ID),
			Namespace:   cc.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			// berth decides about restarts, through its own state machine.
			RestartPolicy:                corev1.RestartPolicyNever,
			Containers:                   []corev1.Container{c},
			Volumes:                      vols,
			NodeSelector:                 maps.Clone(spec.Scheduling.NodeSelector),
			Tolerations:                  tolerations(spec.Scheduling.Tolerations),
			Affinity:                     affinity(spec.Scheduling.Constraints),
			SecurityContext:              podSecurity(),
			AutomountServiceAccountToken: new(false),
			// A user's container has no business with the cluster's
			// services' addresses in its environment.
			EnableServiceLinks: new(false),
		},
	}
	if pullSecret != "" {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
	}
	return pod, nil
}

// podLabels splits berth's labels into what Kubernetes accepts as labels
// and the rest, which becomes annotations of the same key (an owner such as
// alice@example.com is not a label value). The labels List, Watch and Owns
// select on are always valid labels.
func podLabels(all map[string]string) (labels, annotations map[string]string, err error) {
	labels = make(map[string]string, len(all))
	for k, v := range all {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, nil, fmt.Errorf("label %q is not a Kubernetes label key: %s", k, strings.Join(errs, "; "))
		}
		if len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
			continue
		}
		switch k {
		case runtime.LabelManaged, runtime.LabelInstanceID, runtime.LabelScope:
			return nil, nil, fmt.Errorf("label %s=%q is not a Kubernetes label value", k, v)
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	return labels, annotations, nil
}

// envVars renders env sorted, so the same spec makes the same Pod.
func envVars(env map[string]string) []corev1.EnvVar {
	if len(env) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return out
}

func pullPolicy(p string) corev1.PullPolicy {
	switch p {
	case berth.PullAlways:
		return corev1.PullAlways
	case berth.PullNever:
		return corev1.PullNever
	}
	return corev1.PullIfNotPresent
}

// containerSecurity is the restrictive default: no privilege, no way to
// gain any (setuid binaries), no Linux capabilities beyond those the
// runtime grants every process, the runtime's default seccomp profile.
func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               new(false),
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// podSecurity keeps the Pod out of the node's namespaces (the PodSpec's
// hostNetwork, hostPID and hostIPC stay false) and applies the default
// seccomp profile to every container.
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func ports(ps []berth.Port) ([]corev1.ContainerPort, error) {
	var out []corev1.ContainerPort
	for _, p := range ps {
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			return nil, fmt.Errorf("port %d: out of range", p.ContainerPort)
		}
		proto := corev1.Protocol(strings.ToUpper(p.Protocol))
		switch proto {
		case "":
			proto = corev1.ProtocolTCP
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			return nil, fmt.Errorf("port %d/%s: unknown protocol", p.ContainerPort, p.Protocol)
		}
		out = append(out, corev1.ContainerPort{ContainerPort: int32(p.ContainerPort), Protocol: proto})
	}
	return out, nil
}

// resources makes the template's resources both requests and limits: the
// scheduler reserves what the container may use (Guaranteed QoS when CPU
// and memory are both given).
func resources(r berth.Resources) (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for _, q := range []struct {
		name  corev1.ResourceName
		value string
	}{{corev1.ResourceCPU, r.CPU}, {corev1.ResourceMemory, r.Memory}} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("resources.%s %q: %w", q.name, q.value, err)
		}
		if v.Sign() <= 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("resources.%s %q: want more than zero", q.name, q.value)
		}
		list[q.name] = v
	}
	switch {
	case r.GPUs < 0:
		return corev1.ResourceRequirements{}, fmt.Errorf("gpus %d: want zero or more", r.GPUs)
	case r.GPUs > 0:
		list[GPUResource] = *resource.NewQuantity(int64(r.GPUs), resource.DecimalSI)
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// volumes turns the spec's volumes into Pod volumes and mounts: pvc and
// empty_dir as such, bind as a hostPath under the cluster's allowed roots.
// Docker's named volumes have no meaning on a cluster.
func volumes(vols []berth.Volume, roots []string) ([]corev1.Volume, []corev1.VolumeMount, error) {
	// A hostPath is a Docker bind under another name: the same rule.
	if err := hostpolicy.CheckSpec(vols); err != nil {
		return nil, nil, err
	}
	var vs []corev1.Volume
	var ms []corev1.VolumeMount
	for i, v := range vols {
		if !path.IsAbs(v.Target) {
			return nil, nil, fmt.Errorf("volume target %q: want an absolute path", v.Target)
		}
		name := fmt.Sprintf("v%d", i)
		vol := corev1.Volume{Name: name}
		switch v.Type {
		case berth.VolumePVC:
			if errs := validation.IsDNS1123Subdomain(v.Source); len(errs) > 0 {
				return nil, nil, fmt.Errorf("pvc %q: not a claim name: %s", v.Source, strings.Join(errs, "; "))
			}
			vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Source, ReadOnly: v.ReadOnly}
		case berth.VolumeEmptyDir:
			vol.EmptyDir = &corev1.EmptyDirVolumeSource{}
		case berth.VolumeBind:
			if err := hostpolicy.HostPathAllowed(v.Source, roots); err != nil {
				return nil, nil, err
			}
			// DirectoryOrCreate: a per-user path works on first use, as
			// a Docker bind does.
			vol.HostPath = &corev1.HostPathVolumeSource{Path: path.Clean(v.Source), Type: new(corev1.HostPathDirectoryOrCreate)}
		case berth.VolumeNamed, "":
			return nil, nil, fmt.Errorf("volume %q: type %q is Docker's; on kubernetes use %q", v.Source, berth.VolumeNamed, berth.VolumePVC)
		default:
			return nil, nil, fmt.Errorf("volume %q: unknown type %q", v.Source, v.Type)
		}
		vs = append(vs, vol)
		ms = append(ms, corev1.VolumeMount{Name: name, MountPath: path.Clean(v.Target), ReadOnly: v.ReadOnly})
	}
	return vs, ms, nil
}

func tolerations(ts []berth.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		out = append(out, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect),
		})
	}
	return out
}

// affinity makes the constraints one required node-selector term: a node
// must meet all of them.
func affinity(cs []berth.Constraint) *corev1.Affinity {
	if len(cs) == 0 {
		return nil
	}
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(cs))
	for _, c := range cs {
		reqs = append(reqs, corev1.NodeSelectorRequirement{
			Key: c.Key, Operator: corev1.NodeSelectorOperator(c.Operator), Values: slices.Clone(c.Values),
		})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
		},
	}}
}
