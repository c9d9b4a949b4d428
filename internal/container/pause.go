package container

// The pause and resume operations: a user's request to freeze a running
// container's processes where they are (their memory kept) and to let them
// carry on. Their requests leave the status as it is (running, paused) and
// write the operation's outbox item; the worker asks the runtime and then
// records running → paused or paused → running (fsm), and so does the state
// loop when the runtime reports it first.
const (
	OpPause  Op = "pause"
	OpResume Op = "resume"
)

// Event types of a pause and a resume.
const (
	// EventPauseRequested: a user asked for the running instance to be
	// paused; the status did not change yet.
	EventPauseRequested = "ContainerPauseRequested"
	// EventPaused: the container's processes are frozen (running → paused).
	EventPaused = "ContainerPaused"
	// EventResumeRequested: a user asked for the paused instance to carry
	// on; the status did not change yet.
	EventResumeRequested = "ContainerResumeRequested"
	// EventResumed: the container's processes run again (paused → running).
	EventResumed = "ContainerResumed"
)

// PauseOp reports whether op is a pause or a resume.
func (op Op) PauseOp() bool { return op == OpPause || op == OpResume }

// RuntimePauses reports whether the runtime of kind ("" is Docker) can pause
// a container keeping its memory: Docker can (the engine's cgroup freezer);
// Kubernetes cannot (a Pod has no pause in its API). This is the one rule
// the API refuses a pause by, before anything is written; the runtimes
// keep it (runtime.Pauser, held to it by the runtimes' conformance suite).
func RuntimePauses(kind string) bool { return kind == "" || kind == RuntimeDocker }

// RuntimeKind is the runtime kind inst runs on: its frozen spec's, else the
// one recorded on the instance ("" is Docker).
func (inst Instance) RuntimeKind() string {
	if inst.Spec.Runtime != "" {
		return inst.Spec.Runtime
	}
	return inst.Runtime
}
