package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/config"
	berth "github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/testenv"
)

func TestPullPolicy(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	ctx := testenv.Context(t, 60*time.Second)
	const absent = "berth-test/absent:never"
	// A registry on loopback that refuses connections: the pull fails at
	// once and nothing leaves the machine.
	const unreachable = "127.0.0.1:9/berth-test/absent:1"
	tests := []struct {
		name   string
		image  string
		policy string
		check  func(error) bool
		want   string
	}{
		{"never, present", e.image, berth.PullNever, func(err error) bool { return err == nil }, ""},
		{"if not present, present", e.image, berth.PullIfNotPresent, func(err error) bool { return err == nil }, ""},
		{"default, present", e.image, "", func(err error) bool { return err == nil }, ""},
		{"never, missing", absent, berth.PullNever, runtime.IsInvalid, "pull_policy is Never"},
		{"if not present, registry down", unreachable, berth.PullIfNotPresent, runtime.Retryable, "pull"},
		{"always, registry down", unreachable, berth.PullAlways, runtime.Retryable, "pull"},
		{"unknown policy", e.image, "Sometimes", runtime.IsInvalid, "pull_policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := e.instance("true")
			inst.Spec.Image, inst.Spec.PullPolicy = tt.image, tt.policy
			_, err := e.Create(ctx, inst)
			if !tt.check(err) || (tt.want != "" && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want a %q error", err, tt.want)
			}
			noSecret(t, err)
		})
	}
}

func TestCheckImages(t *testing.T) {
	t.Parallel()
	e := newEngine(t,
		config.DockerHost{Name: "a", Endpoint: testenv.DockerHost(t), NetworkMode: "none", Labels: map[string]string{"zone": "a"}},
		config.DockerHost{Name: "b", Endpoint: testenv.DockerHost2(t), NetworkMode: "none", Labels: map[string]string{"zone": "b"}},
	)
	templates := []berth.Template{
		{Name: "busybox", Runtime: "docker", Image: e.image, PullPolicy: berth.PullNever},
		{Name: "absent", Runtime: "docker", Image: "berth-test/absent:never", PullPolicy: berth.PullNever},
		{Name: "zone-b", Runtime: "docker", Image: e.image, Scheduling: berth.Scheduling{HostLabels: map[string]string{"zone": "b"}}},
		{Name: "zone-c", Image: e.image, Scheduling: berth.Scheduling{HostLabels: map[string]string{"zone": "c"}}},
		{Name: "on-k8s", Runtime: "kubernetes", Image: "whatever"},
	}
	got := e.CheckImages(testenv.Context(t, 30*time.Second), templates)
	type row struct {
		template, host string
		present, fails bool
		err            bool
	}
	want := []row{
		{"busybox", "a", true, false, false},
		{"busybox", "b", true, false, false},
		{"absent", "a", false, true, false},
		{"absent", "b", false, true, false},
		{"zone-b", "b", true, false, false},
		{"zone-c", "", false, false, true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statuses, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Template != w.template || g.Host != w.host || g.Present != w.present || g.WillFail() != w.fails || (g.Error != "") != w.err {
			t.Errorf("status %d = %+v, want %+v", i, g, w)
		}
		if g.Present && g.ImageID == "" {
			t.Errorf("status %d: present without an image id", i)
		}
	}
}
