package manager

import (
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/hostpolicy"
	"github.com/berth-io/berth/internal/runvars"
)

// Which owner a named volume is for is decided by its name alone: berth
// scopes a named volume to its owner (hostpolicy.ScopedVolumeName) unless
// the template declares it shared, and the runtime makes or mounts the
// volume of that name. Two rules keep one owner's volume from another's
// containers; the runtime's volume labels are the last line
// (internal/runtime/docker/volumes.go).

// checkVolumeOwners adds the errors of volume v (at field, its source
// expanded to source) about whose volume it names. At PUT (atPut) and at
// every create: a shared named volume never takes the scoped form
// (hostpolicy.CheckUnscopedVolumeName), checked on the real values at
// create, as a value ($CONTAINER_NAME "data-u<alice's digits>") is what
// would make it. At PUT only, being the template's own rule: no source
// every owner reaches (a shared named volume, a claim) is keyed by a
// variable the user picks.
func checkVolumeOwners(f *fields, field string, v container.Volume, source string, atPut bool) {
	if v.Type == container.VolumeNamed && v.Shared {
		if err := hostpolicy.CheckUnscopedVolumeName(source); err != nil {
			f.add(field+".source", "%v", err)
		}
	}
	if atPut && (v.Type == container.VolumeNamed && v.Shared || v.Type == container.VolumePVC) {
		// A name the user picks, as the key of a volume every owner
		// reaches, lets any user pick another's: bob names his container
		// as alice named hers and mounts her data. Refused rather than
		// warned (templates have no warnings): the admin keys it by
		// $USERID, or drops shared so berth scopes it.
		if vars := runvars.ByUser(v.Source); len(vars) > 0 {
			f.add(field+".source", "%s", userKeyedMessage(v, vars))
		}
	}
}

// userKeyedMessage names the rule a user-keyed shared source breaks.
func userKeyedMessage(v container.Volume, vars []string) string {
	what := "a shared named volume"
	fix := "key it by $USERID, or drop shared so berth scopes it to its owner"
	if v.Type == container.VolumePVC {
		what, fix = "a claim", "key it by $USERID"
	}
	return fmt.Sprintf("%s is reached by every owner, so its name must not use $%s, which the user picks: any user could pick another's volume (%s)", what, strings.Join(vars, ", $"), fix)
}
