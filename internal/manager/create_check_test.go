package manager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// TestCreateRechecksConfiguration: a template is checked once when it is
// stored, and a create checks again what the configuration decides, which
// may have changed since (another process, a restart with a new config):
// the runtime is still allowed and has a node carrying the template's
// literal host_labels, and the bind sources, resolved, lie inside the bind
// roots. Each case stores a valid template through one manager and creates
// from it through another over the same store, configured as after the
// change; the create is refused naming the field. On both stores.
func TestCreateRechecksConfiguration(t *testing.T) {
	tpl := container.Template{Name: "t", Runtime: "docker", Image: "busybox", PullPolicy: container.PullIfNotPresent,
		Scheduling: container.Scheduling{HostLabels: map[string]string{"disk": "ssd"}},
		Volumes:    []container.Volume{{Type: container.VolumeBind, Source: "/r/$USERID", Target: "/data"}}}
	before := manager.Options{Runtimes: []string{"docker", "kubernetes"}, BindRoots: []string{"/r"}, NodesKnown: true,
		Nodes: []manager.Node{{Kind: "docker", Name: "h1", Labels: map[string]string{"disk": "ssd"}}, {Kind: "kubernetes", Name: "c1"}}}
	cases := []struct {
		name   string
		change func(o *manager.Options)
		field  string
	}{
		{"unchanged", func(*manager.Options) {}, ""},
		{"runtime switched off", func(o *manager.Options) { o.Runtimes = []string{"kubernetes"} }, "runtime"},
		{"its runtime's node removed", func(o *manager.Options) { o.Nodes = o.Nodes[1:] }, "runtime"},
		{"host label gone", func(o *manager.Options) {
			o.Nodes = []manager.Node{{Kind: "docker", Name: "h1", Labels: map[string]string{"disk": "hdd"}}, o.Nodes[1]}
		}, "scheduling.host_labels"},
		{"bind root removed", func(o *manager.Options) { o.BindRoots = []string{"/elsewhere"} }, "volumes[0].source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			teststores.Each(t, func(t *testing.T, b teststores.Backend) {
				t.Parallel()
				ctx := context.Background()
				st := b.Open(t, time.Now)
				o := before
				o.Store, o.Logger = st, quiet
				if _, _, err := manager.New(o).PutTemplate(ctx, rootCaller, tpl); err != nil {
					t.Fatal(err)
				}
				o.Nodes = append([]manager.Node(nil), before.Nodes...)
				tc.change(&o)
				_, err := manager.New(o).CreateByTemplate(ctx, identity.Caller{User: "alice"}, manager.CreateRequest{Template: "t"}, nil, "")
				if tc.field == "" {
					if err != nil {
						t.Fatalf("create with the configuration unchanged: %v", err)
					}
					return
				}
				if !onlyField(err, tc.field) {
					t.Fatalf("create: %v, want a validation error naming %s only", err, tc.field)
				}
				if tc.field != "volumes[0].source" && !strings.Contains(err.Error(), "no longer valid here") {
					t.Errorf("create: %v, want it to say the template is no longer valid here", err)
				}
			})
		})
	}
}
