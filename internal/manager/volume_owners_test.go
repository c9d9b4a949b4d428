package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/teststores"
)

// volumeTemplate is a template mounting v at /v on runtime rt.
func volumeTemplate(rt string, v container.Volume) container.Template {
	v.Target = "/v"
	return container.Template{Name: "t", Runtime: rt, Image: "busybox", PullPolicy: container.PullIfNotPresent,
		Volumes: []container.Volume{v}}
}

// onlyField reports whether err is a validation error of field alone.
func onlyField(err error, field string) bool {
	var ve *manager.ValidationError
	return errors.As(err, &ve) && len(ve.Fields) == 1 && ve.Fields[0].Field == field
}

// TestPutTemplateVolumeOwners: a PUT refuses a source every owner reaches
// (a shared named volume, a claim) keyed by a variable the user picks, and
// a shared volume name of the form berth reserves for scoped ones; names
// berth or the admin picks, and any name berth scopes, are stored.
func TestPutTemplateVolumeOwners(t *testing.T) {
	named := func(src string, shared bool) container.Template {
		return volumeTemplate("docker", container.Volume{Type: container.VolumeNamed, Source: src, Shared: shared})
	}
	claim := func(src string) container.Template {
		return volumeTemplate("kubernetes", container.Volume{Type: container.VolumePVC, Source: src})
	}
	cases := []struct {
		name string
		tpl  container.Template
		say  string // "" when stored
	}{
		{"shared, keyed by the container's name", named("$CONTAINER_NAME", true), "$CONTAINER_NAME, which the user picks"},
		{"shared, keyed by the group", named("g-${GROUP}", true), "$GROUP, which the user picks"},
		{"shared, keyed by both", named("$GROUP-$CONTAINER_NAME", true), "$CONTAINER_NAME, $GROUP, which the user picks"},
		{"shared, of the scoped form", named("data-u0123456789ab", true), "the form berth reserves"},
		{"claim keyed by the container's name", claim("c-$CONTAINER_NAME"), "a claim is reached by every owner"},
		{"shared, keyed by the owner", named("home-$USERID", true), ""},
		{"shared, keyed by berth's and the admin's names", named("$TEMPLATE-$CONTAINER_ID", true), ""},
		{"scoped, keyed by the container's name", named("$CONTAINER_NAME", false), ""},
		{"claim keyed by the owner", claim("c-$USERID"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := manager.New(manager.Options{Store: teststores.Bolt(t, time.Now), Logger: quiet, Runtimes: []string{"docker", "kubernetes"}})
			_, _, err := m.PutTemplate(context.Background(), rootCaller, tc.tpl)
			if tc.say == "" {
				if err != nil {
					t.Fatalf("PUT: %v, want stored", err)
				}
				return
			}
			if !onlyField(err, "volumes[0].source") || !strings.Contains(err.Error(), tc.say) {
				t.Fatalf("PUT: %v, want a validation error of volumes[0].source saying %q", err, tc.say)
			}
		})
	}
}

// TestCreateSharedVolumeNeverScoped: the attack, through a template
// stored before the PUT refused it (straight into the store). Bob names his
// container as alice's scoped volume and the shared source
// $CONTAINER_NAME would make it hers: the create is refused naming the
// volume; another name is created.
func TestCreateSharedVolumeNeverScoped(t *testing.T) {
	alices := hostpolicy.ScopedVolumeName("data", "alice")
	cases := []struct {
		name, field string
	}{
		{alices, "volumes[0].source"},
		{"data", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststores.Bolt(t, time.Now)
			if _, _, err := st.PutTemplate(ctx, volumeTemplate("docker", container.Volume{Type: container.VolumeNamed, Source: "$CONTAINER_NAME", Shared: true})); err != nil {
				t.Fatal(err)
			}
			m := manager.New(manager.Options{Store: st, Logger: quiet, Runtimes: []string{"docker"}})
			_, err := m.CreateByTemplate(ctx, identity.Caller{User: "bob"}, manager.CreateRequest{Template: "t", Name: tc.name}, nil, "")
			if tc.field == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !onlyField(err, tc.field) {
				t.Fatalf("create named %q: %v, want a validation error of %s", tc.name, err, tc.field)
			}
		})
	}
}
