package hostpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
)

// maxVolumeName is the longest volume name berth makes (the engine's local
// driver takes 255 characters).
const maxVolumeName = 255

// ScopedVolumeName is the name berth gives a template's named volume for
// owner, unless the template declares it shared: the name, "-u", and the
// first 12 hex digits of the SHA-256 of the owner's id (cutting the name
// so the whole stays within 255 characters). It is deterministic, so an
// owner's containers of the same template share the volume, and it uses
// only characters a Docker volume name allows. Two owners never get the
// same name: a variable in the name ($CONTAINER_NAME, $GROUP) cannot make
// bob's name alice's, as the suffix names the owner. Every name it returns
// has the reserved form (CheckUnscopedVolumeName), which no other name may
// take.
func ScopedVolumeName(name, owner string) string {
	sum := sha256.Sum256([]byte(owner))
	suffix := "-u" + hex.EncodeToString(sum[:6])
	if len(name) > maxVolumeName-len(suffix) {
		name = name[:maxVolumeName-len(suffix)]
	}
	return name + suffix
}

// scopedForm is the shape of every ScopedVolumeName, in either case: a
// case-insensitive file system under the engine's volumes would take
// "DATA-U0A…" for "data-u0a…".
var scopedForm = regexp.MustCompile(`(?i)-u[0-9a-f]{12}$`)

// CheckUnscopedVolumeName refuses a named volume that berth does not scope
// to its owner (a shared one) when its name, expanded, has the reserved
// form of a scoped name: ending in "-u" and 12 hex digits. Scoped names
// always end so and other names never do, so no value of a variable
// ($CONTAINER_NAME "data-u<alice's digits>") and no literal can make a
// shared name that is an owner's private volume. The rule keeps the two
// sets apart by name alone, before any engine is asked; a reserved prefix
// would do the same but rename every existing scoped volume.
func CheckUnscopedVolumeName(name string) error {
	if scopedForm.MatchString(name) {
		return fmt.Errorf("volume name %q ends in \"-u\" and 12 hex digits, the form berth reserves for volumes it scopes to one owner: a shared volume cannot take it", name)
	}
	return nil
}
