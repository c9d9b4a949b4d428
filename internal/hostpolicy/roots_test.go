package hostpolicy_test

import (
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
)

func TestHostPathAllowed(t *testing.T) {
	tests := []struct {
		src   string
		roots []string
		want  string // "" = allowed, else a part of the error
	}{
		{"/srv/x", []string{"/srv"}, ""},
		{"/srv/x", []string{"/srv/x/"}, ""},
		{"/srv/x/y", []string{"/data", "/srv/"}, ""},
		{"/anything", []string{"/"}, ""},
		{"/srv/x", nil, "allows no host paths"},
		{"/srvx", []string{"/srv"}, "outside the allowed roots"},
		{"/srv/../etc", []string{"/srv"}, "outside the allowed roots"},
		{"srv/x", []string{"/"}, "absolute"},
	}
	for _, tt := range tests {
		err := hostpolicy.HostPathAllowed(tt.src, tt.roots)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q under %v: %v", tt.src, tt.roots, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q under %v: err = %v, want %q", tt.src, tt.roots, err, tt.want)
		}
	}
}

func TestHostPathsAllowedLooksOnlyAtBinds(t *testing.T) {
	vols := []container.Volume{
		{Type: container.VolumeNamed, Source: "data", Target: "/data"},
		{Type: container.VolumeBind, Source: "/srv/a", Target: "/a"},
	}
	if err := hostpolicy.HostPathsAllowed(vols, []string{"/srv"}); err != nil {
		t.Errorf("binds under the root: %v", err)
	}
	if err := hostpolicy.HostPathsAllowed(vols, []string{"/data"}); err == nil {
		t.Error("a bind outside the roots was allowed")
	}
}

// TestCheckRoot: the one rule for a node's roots, whichever runtime.
func TestCheckRoot(t *testing.T) {
	tests := []struct {
		root string
		want string // "" = accepted, else a part of the error
	}{
		{"/srv/berth", ""},
		{"/", "must not be /"},
		{"", "must not be empty"},
		{"srv", "absolute"},
		{"/srv/../etc", "clean"},
		{"/srv/", "clean"},
	}
	for _, tt := range tests {
		err := hostpolicy.CheckRoot(tt.root)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckRoot(%q) = %v", tt.root, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckRoot(%q) = %v, want %q", tt.root, err, tt.want)
		}
	}
}
