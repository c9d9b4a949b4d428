package container

// Spec is the resolved container specification: the template merged with
// the user's values and with runtime variables substituted. It is written on
// the instance at create time and never recomputed, so editing or deleting a
// template changes no existing instance.
//
// Env may hold secrets: Spec is never part of an API response (Instance
// omits it from JSON) and must never be logged whole.
type Spec struct {
	Runtime    string            `json:"runtime"`
	Image      string            `json:"image"`
	PullPolicy string            `json:"pull_policy,omitempty"`
	Command    []string          `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Workdir    string            `json:"workdir,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	// SecretEnv maps environment variables to secret names, resolved only
	// by the worker as it makes the container (values are never stored).
	SecretEnv  map[string]string `json:"secret_env,omitempty"`
	Volumes    []Volume          `json:"volumes,omitempty"`
	Ports      []Port            `json:"ports,omitempty"`
	Resources  Resources         `json:"resources"`
	Scheduling Scheduling        `json:"scheduling"`
	// Labels are the template's labels and the instance's, template winning.
	Labels map[string]string `json:"labels,omitempty"`
}
