package container

// Runtime kinds a template may name.
const (
	RuntimeDocker     = "docker"
	RuntimeKubernetes = "kubernetes"
)

// Pull policies, as Kubernetes spells them.
const (
	PullIfNotPresent = "IfNotPresent"
	PullAlways       = "Always"
	PullNever        = "Never"
)

// Volume types.
const (
	VolumeBind     = "bind"
	VolumeNamed    = "volume"
	VolumePVC      = "pvc"
	VolumeEmptyDir = "empty_dir"
)

// Template is what an admin publishes and users create containers from.
type Template struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Runtime     string            `json:"runtime"`
	Image       string            `json:"image"`
	PullPolicy  string            `json:"pull_policy,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Workdir     string            `json:"workdir,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// SecretEnv maps environment variables to secret names: the worker
	// reads each secret from the configured source when it makes the
	// container, and the value goes nowhere else.
	SecretEnv  map[string]string `json:"secret_env,omitempty"`
	UserEnv    []string          `json:"user_env,omitempty"`
	Volumes    []Volume          `json:"volumes,omitempty"`
	Ports      []Port            `json:"ports,omitempty"`
	Resources  Resources         `json:"resources"`
	Scheduling Scheduling        `json:"scheduling"`
	Labels     map[string]string `json:"labels,omitempty"`
	// Lifetime bounds the life of the template's instances; nil: the
	// deployment's (container.default_lifetime, container.max_lifetime).
	Lifetime *Lifetime `json:"lifetime,omitempty"`
	// Retention is how long the template's ended instances are kept;
	// nil: the deployment's (container.stopped_retention,
	// container.failed_retention).
	Retention *Retention `json:"retention,omitempty"`
	// Restart is what berth does when a container of the template exits
	// by itself; nil: nothing (it ends stopped or failed).
	Restart *Restart `json:"restart,omitempty"`
	// Exec lets the owner of an instance of the template, and admins, run
	// commands in its running container (POST /api/containers/{id}/exec).
	// False by default: a template's containers are closed unless its
	// admin opens them. Read at each exec, so closing a template closes
	// its running instances too.
	Exec bool `json:"exec,omitempty"`
	// Version counts writes of the template; set by the store.
	Version   int64  `json:"version"`
	UpdatedAt string `json:"updated_at,omitempty"`
	// ImageStatus is the last image check, per host; set by the store's
	// SetImageStatus only (a PUT's value is ignored).
	ImageStatus []ImageStatus `json:"image_status,omitempty"`
}

// Volume is a mount into the container.
type Volume struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Type     string `json:"type"`
	// Shared declares a source every owner's containers may reach: a bind
	// source without an owner segment ($USERID, $WORKSPACE_PATH), or a
	// named volume berth must not scope to the owner. Without it berth
	// refuses such a bind source and scopes a named volume's name to the
	// owner (ScopedVolumeName).
	Shared bool `json:"shared,omitempty"`
	// Persist keeps a named volume berth made after its last instance is
	// deleted; without it the volume is removed with that instance.
	Persist bool `json:"persist,omitempty"`
}

// Port is a container port to expose.
type Port struct {
	ContainerPort int    `json:"container_port"`
	Protocol      string `json:"protocol,omitempty"`
}

// Resources bounds what a container may use. CPU is in cores ("0.5", "2")
// or millicores ("500m"); memory in bytes with an optional binary suffix
// ("256Mi", "1Gi"), as Kubernetes writes them.
type Resources struct {
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	GPUs   int    `json:"gpus,omitempty"`
}

// Scheduling says where a container may run: host labels pick Docker hosts,
// the rest is handed to Kubernetes.
type Scheduling struct {
	HostLabels   map[string]string `json:"host_labels,omitempty"`
	NodeSelector map[string]string `json:"node_selector,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	Constraints  []Constraint      `json:"constraints,omitempty"`
}

// Toleration mirrors a Kubernetes toleration.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Constraint is a node-affinity style rule: key In/NotIn/Exists values.
type Constraint struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}
