package hostpolicy

import (
	"regexp"
	"strings"
	"testing"
)

func TestScopedVolumeName(t *testing.T) {
	dockerName := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	long := strings.Repeat("v", 300)
	a, b := ScopedVolumeName("vol-data", "alice"), ScopedVolumeName("vol-data", "bob")
	if a == b || a != ScopedVolumeName("vol-data", "alice") || !strings.HasPrefix(a, "vol-data-u") {
		t.Errorf("alice %q, bob %q: want two deterministic names of vol-data", a, b)
	}
	for _, n := range []string{a, b, ScopedVolumeName(long, "a@b/c"), ScopedVolumeName("x", "é ..")} {
		if !dockerName.MatchString(n) || len(n) > 255 {
			t.Errorf("%q: not a volume name the engine takes", n)
		}
	}
	// A user cannot name a volume into another user's: the suffix is the
	// owner's.
	if ScopedVolumeName("vol-x-u"+a[len(a)-12:], "bob") == a {
		t.Error("bob reached alice's volume by its name")
	}
}

// TestCheckUnscopedVolumeName: no name a shared volume may take is a scoped
// name, for any owner; names merely like the form are left alone.
func TestCheckUnscopedVolumeName(t *testing.T) {
	alice := ScopedVolumeName("data", "alice")
	cases := []struct {
		why, name string
		refused   bool
	}{
		{"the issue's collision: bob names his container as alice's volume", alice, true},
		{"a scoped name cut to fit", ScopedVolumeName(strings.Repeat("v", 300), "bob"), true},
		{"another case (a case-insensitive file system)", strings.ToUpper(alice), true},
		{"a plain name", "data", false},
		{"no digits", "data-u", false},
		{"11 digits", "data-u0123456789a", false},
		{"not hex at the end", "data-u0123456789abg", false},
		{"more after the digits", "data-u0123456789ab-x", false},
		{"'_' where scoping writes '-'", "data_u0123456789ab", false},
		{"another letter", "data-x0123456789ab", false},
	}
	for _, c := range cases {
		err := CheckUnscopedVolumeName(c.name)
		if (err != nil) != c.refused {
			t.Errorf("%s (%q): err %v, want refused %v", c.why, c.name, err, c.refused)
		}
	}
}
