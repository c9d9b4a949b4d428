package manager

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Names are DNS labels: they become Docker container names and Kubernetes
// object names, so both runtimes accept them as they are.
var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	labelKey   = regexp.MustCompile(`^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// instanceID is a ULID: what container.NewID makes.
	instanceID   = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)
	maxLabels    = 32
	maxEnv       = 128
	maxEnvValue  = 32 << 10
	reservedPref = "berth."
)

func validName(f *fields, field, v string) {
	if !dnsLabel.MatchString(v) {
		f.add(field, "must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit")
	}
}

func validLabels(f *fields, field string, labels map[string]string) {
	if len(labels) > maxLabels {
		f.add(field, "at most %d labels", maxLabels)
	}
	for k, v := range labels {
		switch {
		case !labelKey.MatchString(k):
			f.add(field+"."+k, "invalid label key")
		case strings.HasPrefix(k, reservedPref):
			f.add(field+"."+k, "the %q prefix is reserved for berth", reservedPref)
		}
		if !labelValue.MatchString(v) {
			f.add(field+"."+k, "invalid label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
		}
	}
}

func validGroup(f *fields, field, g string) {
	if g != "" && (!labelValue.MatchString(g)) {
		f.add(field, "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
	}
}

func validEnv(f *fields, field string, env map[string]string) {
	if len(env) > maxEnv {
		f.add(field, "at most %d variables", maxEnv)
	}
	for k, v := range env {
		if !envName.MatchString(k) {
			f.add(field+"."+k, "invalid variable name")
		}
		// Never echo the value: it may be a secret.
		if len(v) > maxEnvValue || strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			f.add(field+"."+k, "value must be valid UTF-8 without NUL, at most %d bytes", maxEnvValue)
		}
	}
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
