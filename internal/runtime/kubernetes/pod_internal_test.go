package kubernetes

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
)

func specInstance() berth.Instance {
	return berth.Instance{
		ID: "01JABCDEFGHJKMNPQRSTVWXYZ0", Owner: "alice@example.com", Template: "jupyter", Group: "team-a",
		Labels: map[string]string{"app": "nb"},
		Spec: berth.Spec{
			Runtime: berth.RuntimeKubernetes, Image: "jupyter/base:1", PullPolicy: berth.PullAlways,
			Command: []string{"start.sh"}, Args: []string{"--port", "8888"}, Workdir: "/home/jovyan",
			Env:       map[string]string{"B": "2", "A": "1"},
			Ports:     []berth.Port{{ContainerPort: 8888}, {ContainerPort: 53, Protocol: "udp"}},
			Resources: berth.Resources{CPU: "500m", Memory: "1Gi", GPUs: 1},
			Volumes: []berth.Volume{
				{Type: berth.VolumePVC, Source: "home-alice", Target: "/home/jovyan"},
				{Type: berth.VolumeEmptyDir, Target: "/tmp/scratch"},
				{Type: berth.VolumeBind, Source: "/data/shared/../shared/x", Target: "/data", ReadOnly: true},
			},
			Scheduling: berth.Scheduling{
				NodeSelector: map[string]string{"gpu": "a100"},
				Tolerations:  []berth.Toleration{{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"}},
				Constraints:  []berth.Constraint{{Key: "zone", Operator: "In", Values: []string{"a", "b"}}},
			},
		},
	}
}

func TestPodFor(t *testing.T) {
	cc := config.KubernetesCluster{Name: "k1", Namespace: "jobs", AllowedHostPathRoots: []string{"/data"}}
	pod, err := podFor(specInstance(), cc, "prod", PullSecretName)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "berth-01jabcdefghjkmnpqrstvwxyz0" || pod.Namespace != "jobs" {
		t.Errorf("name %s/%s", pod.Namespace, pod.Name)
	}
	if pod.Labels["berth.instance-id"] != "01JABCDEFGHJKMNPQRSTVWXYZ0" || pod.Labels["berth.scope"] != "prod" ||
		pod.Labels["berth.managed"] != "true" || pod.Labels["app"] != "nb" || pod.Labels["berth.template"] != "jupyter" {
		t.Errorf("labels %v", pod.Labels)
	}
	if _, ok := pod.Labels["berth.owner"]; ok || pod.Annotations["berth.owner"] != "alice@example.com" {
		t.Errorf("an e-mail owner must be an annotation: labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	s := pod.Spec
	if s.RestartPolicy != corev1.RestartPolicyNever || *s.AutomountServiceAccountToken || *s.EnableServiceLinks ||
		s.HostNetwork || s.HostPID || s.HostIPC {
		t.Errorf("pod spec basics: %+v", s)
	}
	if !reflect.DeepEqual(s.ImagePullSecrets, []corev1.LocalObjectReference{{Name: PullSecretName}}) {
		t.Errorf("imagePullSecrets %v", s.ImagePullSecrets)
	}
	c := s.Containers[0]
	if c.Image != "jupyter/base:1" || c.ImagePullPolicy != corev1.PullAlways || c.WorkingDir != "/home/jovyan" ||
		!reflect.DeepEqual(c.Command, []string{"start.sh"}) || !reflect.DeepEqual(c.Args, []string{"--port", "8888"}) {
		t.Errorf("container %+v", c)
	}
	if !reflect.DeepEqual(c.Env, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}) {
		t.Errorf("env %v", c.Env)
	}
	sc := c.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context %+v", sc)
	}
	if got := c.Resources.Limits[GPUResource]; got.Value() != 1 {
		t.Errorf("gpu limit %v", got)
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("500m")) != 0 {
		t.Errorf("cpu request %v", got.String())
	}
	if got := c.Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("memory limit %v", got.String())
	}
	wantPorts := []corev1.ContainerPort{{ContainerPort: 8888, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
	if !reflect.DeepEqual(c.Ports, wantPorts) {
		t.Errorf("ports %v", c.Ports)
	}
	if s.Volumes[0].PersistentVolumeClaim.ClaimName != "home-alice" || s.Volumes[1].EmptyDir == nil ||
		s.Volumes[2].HostPath.Path != "/data/shared/x" || !c.VolumeMounts[2].ReadOnly {
		t.Errorf("volumes %+v mounts %+v", s.Volumes, c.VolumeMounts)
	}
	if s.NodeSelector["gpu"] != "a100" || s.Tolerations[0].Key != "gpu" || s.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("scheduling: %v %v", s.NodeSelector, s.Tolerations)
	}
	req := s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if req.Key != "zone" || req.Operator != corev1.NodeSelectorOpIn || !reflect.DeepEqual(req.Values, []string{"a", "b"}) {
		t.Errorf("affinity %+v", req)
	}
}

func TestPodForRefuses(t *testing.T) {
	cc := config.KubernetesCluster{Name: "k1", Namespace: "jobs", AllowedHostPathRoots: []string{"/data"}}
	tests := []struct {
		name   string
		change func(*berth.Instance)
		want   string
	}{
		{"host path outside the roots", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: berth.VolumeBind, Source: "/data/../etc", Target: "/x"}}
		}, "outside the allowed roots"},
		{"a hostPath inside a writable hostPath (the Docker bind rule)", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: berth.VolumeBind, Source: "/data/bob", Target: "/home"},
				{Type: berth.VolumeBind, Source: "/data/bob/data", Target: "/d", ReadOnly: true}}
		}, "inside the writable bind mount"},
		{"docker named volume", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: berth.VolumeNamed, Source: "v", Target: "/x"}}
		}, "Docker's"},
		{"relative target", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: berth.VolumeEmptyDir, Target: "x"}}
		}, "absolute"},
		{"bad claim name", func(i *berth.Instance) {
			i.Spec.Volumes = []berth.Volume{{Type: berth.VolumePVC, Source: "Bad_Name", Target: "/x"}}
		}, "not a claim name"},
		{"bad cpu", func(i *berth.Instance) { i.Spec.Resources.CPU = "lots" }, "resources.cpu"},
		{"negative gpus", func(i *berth.Instance) { i.Spec.Resources.GPUs = -1 }, "gpus"},
		{"port out of range", func(i *berth.Instance) { i.Spec.Ports = []berth.Port{{ContainerPort: 70000}} }, "out of range"},
		{"unknown protocol", func(i *berth.Instance) { i.Spec.Ports = []berth.Port{{ContainerPort: 1, Protocol: "icmp"}} }, "protocol"},
		{"bad label key", func(i *berth.Instance) { i.Spec.Labels = map[string]string{"a b": "x"} }, "label key"},
		{"no image", func(i *berth.Instance) { i.Spec.Image = "" }, "no image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := specInstance()
			tt.change(&inst)
			_, err := podFor(inst, cc, "", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "1") && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("env leaked: %v", err)
			}
		})
	}
}

func TestStateOfWaitingReasons(t *testing.T) {
	cl := &cluster{cfg: config.KubernetesCluster{Name: "k1"}}
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"unschedulable", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available",
		}}}}, "Unschedulable: 0/1 nodes are available"},
		{"image pull", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: containerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
		}}}}, "ImagePullBackOff: Back-off pulling image"},
		{"creating is not stuck", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: containerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stateOf(cl, &tt.pod)
			if st.Phase != "created" || st.Error != tt.want {
				t.Errorf("state %s %q, want created %q", st.Phase, st.Error, tt.want)
			}
		})
	}
	oom := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: containerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
	}}}}
	if st := stateOf(cl, &oom); st.Phase != "exited" || !st.OOMKilled || *st.ExitCode != 137 {
		t.Errorf("oom: %+v", st)
	}
	evicted := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}}
	if st := stateOf(cl, &evicted); st.Phase != "exited" || st.ExitCode != nil || st.Error != "Evicted: low on memory" {
		t.Errorf("evicted: %+v", st)
	}
}

// TestPodEventsOfAPodMadeAgain: a watch break can fold a stop's delete and
// the next start's create into one informer update of the same key. The
// new run started within the second of the old one (the API's precision),
// so only its UID tells it apart; it must still be reported as started.
func TestPodEventsOfAPodMadeAgain(t *testing.T) {
	cl := &cluster{cfg: config.KubernetesCluster{Name: "k1"}}
	at := metav1.NewTime(time.Date(2026, 12, 4, 22, 49, 58, 0, time.UTC))
	running := func(uid string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "berth-x", UID: types.UID(uid), Labels: map[string]string{runtime.LabelInstanceID: "01X"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: containerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
			}}},
		}
	}
	tests := []struct {
		name     string
		old, pod *corev1.Pod
		want     []runtime.EventKind
	}{
		{"first seen", nil, running("a"), []runtime.EventKind{runtime.EventStarted}},
		{"resync of the same run", running("a"), running("a"), nil},
		{"made again within the second", running("a"), running("b"), []runtime.EventKind{runtime.EventStarted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []runtime.EventKind
			for _, ev := range podEvents(cl, tt.old, tt.pod) {
				got = append(got, ev.Kind)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events %v, want %v", got, tt.want)
			}
		})
	}
}
