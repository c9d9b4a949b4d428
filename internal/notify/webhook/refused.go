package webhook

import (
	"fmt"
	"net/netip"
)

// RefusedError is a receiver the address policy refuses; it wraps
// ErrRefused. Its message names the host as the URL gave it and the rule,
// never an address a name resolved to nor the resolver's error: the
// message reaches the API caller, and those would let any user ask what
// names resolve to inside the deployment's network. Addr and Cause are
// for the server's log.
type RefusedError struct {
	// Host is the URL's host (a name or a literal address), or the
	// address dialled.
	Host string
	// Rule names why: the refused range (see refusedRanges), or that the
	// name does not resolve.
	Rule string
	// Resolved: Host is a name and Addr what it resolved to.
	Resolved bool
	// Addr is the refused address; the zero Addr when the name did not
	// resolve.
	Addr netip.Addr
	// Cause is the resolver's error, if that is why.
	Cause error
}

func (e *RefusedError) Error() string {
	switch {
	case !e.Addr.IsValid():
		return fmt.Sprintf("%v: %s: %s", ErrRefused, e.Host, e.Rule)
	case e.Resolved:
		return fmt.Sprintf("%v: %s resolves to a refused range (%s) that webhooks.allowed_networks does not list", ErrRefused, e.Host, e.Rule)
	}
	return fmt.Sprintf("%v: %s is in a refused range (%s) that webhooks.allowed_networks does not list", ErrRefused, e.Host, e.Rule)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }
