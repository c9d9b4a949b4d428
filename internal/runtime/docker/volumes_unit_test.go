package docker

import (
	"testing"

	berth "github.com/berth-io/berth/internal/container"
)

// TestVolumeMismatch: which existing volumes a named volume of alice's
// instance mounts, by their labels, beside the labels berth writes
// (namedVolumeOptions), which always match.
func TestVolumeMismatch(t *testing.T) {
	scoped := berth.Volume{Type: berth.VolumeNamed, Source: "v"}
	shared := berth.Volume{Type: berth.VolumeNamed, Source: "v", Shared: true}
	kept := func(v berth.Volume) berth.Volume { v.Persist = true; return v }
	made := func(owner, persist string) map[string]string {
		return map[string]string{labelVolumeMadeBy: "true", labelVolumeOwner: owner, labelVolumePersist: persist}
	}
	legacy := map[string]string{labelVolumeMadeBy: "true", labelVolumePersist: "false"}
	cases := []struct {
		name    string
		labels  map[string]string
		v       berth.Volume
		refused bool
	}{
		{"alice's, as made", made("alice", "false"), scoped, false},
		{"alice's, kept", made("alice", "true"), kept(scoped), false},
		{"shared, as made", made("", "false"), shared, false},
		{"made before owner labels: the name is the owner's", legacy, scoped, false},
		{"not berth's, shared (an admin's data)", nil, shared, false},
		{"not berth's, scoped", nil, scoped, true},
		{"another label set, not berth's", map[string]string{"x": "y"}, scoped, true},
		{"bob's", made("bob", "false"), scoped, true},
		{"a shared one, as alice's scoped", made("", "false"), scoped, true},
		{"alice's scoped, as shared", made("alice", "false"), shared, true},
		{"kept, asked not to", made("alice", "true"), scoped, true},
		{"not kept, asked to", made("alice", "false"), kept(scoped), true},
		{"made before owner labels, persist differs", legacy, kept(scoped), true},
	}
	for _, c := range cases {
		err := volumeMismatch(c.labels, c.v, "alice")
		if (err != nil) != c.refused {
			t.Errorf("%s: err %v, want refused %v", c.name, err, c.refused)
		}
	}
	for _, v := range []berth.Volume{scoped, shared, kept(scoped), kept(shared)} {
		if err := volumeMismatch(namedVolumeOptions(v, "alice").Labels, v, "alice"); err != nil {
			t.Errorf("%+v: berth's own labels refused: %v", v, err)
		}
	}
}
