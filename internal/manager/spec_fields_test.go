package manager_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// An instance's Spec is its template resolved: every Spec field comes from
// the template's field of the same name and type (Labels merged with the
// request's), and a create carries each one over. A field added to both
// without being carried over fails here, as does one the template lacks:
// the template below must set every field Spec shares with it, which this
// test checks too, so a new field cannot be left out of the test either.
func TestSpecCarriesEveryTemplateField(t *testing.T) {
	tpl := container.Template{Name: "every", Runtime: "docker", Image: "busybox", PullPolicy: container.PullIfNotPresent,
		Command: []string{"sh", "-c"}, Args: []string{"exec sleep 3600"}, Workdir: "/w",
		Env: map[string]string{"A": "a"}, SecretEnv: map[string]string{"TOKEN": "token"},
		Volumes:    []container.Volume{{Type: container.VolumeNamed, Source: "data", Target: "/data"}},
		Ports:      []container.Port{{ContainerPort: 8080}},
		Resources:  container.Resources{CPU: "1", Memory: "64Mi"},
		Scheduling: container.Scheduling{HostLabels: map[string]string{"disk": "ssd"}},
		Labels:     map[string]string{"cost": "c1"}}
	specType, tplType := reflect.TypeFor[container.Spec](), reflect.TypeFor[container.Template]()
	for f := range specType.Fields() {
		tf, ok := tplType.FieldByName(f.Name)
		switch {
		case !ok:
			t.Errorf("Spec.%s has no field of that name in Template to come from", f.Name)
		case tf.Type != f.Type:
			t.Errorf("Spec.%s is %s, Template.%s %s", f.Name, f.Type, f.Name, tf.Type)
		case reflect.ValueOf(tpl).FieldByName(f.Name).IsZero():
			t.Errorf("this test's template leaves %s unset: set it, so that the create is checked to carry it", f.Name)
		}
	}
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		ctx := context.Background()
		m := manager.New(manager.Options{Store: b.Open(t, time.Now), Logger: quiet, Runtimes: []string{"docker"}, NodesKnown: true,
			Nodes: []manager.Node{{Kind: "docker", Name: "h1", Labels: map[string]string{"disk": "ssd"}}}})
		if _, _, err := m.PutTemplate(ctx, rootCaller, tpl); err != nil {
			t.Fatal(err)
		}
		res, err := m.CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: tpl.Name}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		spec := reflect.ValueOf(res.Instance.Spec)
		for i, f := range reflect.VisibleFields(specType) {
			if spec.Field(i).IsZero() {
				t.Errorf("the created instance's Spec.%s is empty: the create did not carry the template's", f.Name)
			}
		}
	})
}
