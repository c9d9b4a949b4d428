package hostpolicy

import (
	"crypto/sha256"
	"encoding/hex"
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
// bob's name alice's, as the suffix names the owner.
func ScopedVolumeName(name, owner string) string {
	sum := sha256.Sum256([]byte(owner))
	suffix := "-u" + hex.EncodeToString(sum[:6])
	if len(name) > maxVolumeName-len(suffix) {
		name = name[:maxVolumeName-len(suffix)]
	}
	return name + suffix
}
