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
