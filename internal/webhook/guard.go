package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrRefused is a receiver address the deployment does not allow: a
// loopback, link-local (the instance metadata address 169.254.169.254
// among them), private, shared, unspecified or multicast address, or a name
// that resolves to one, unless webhooks.allowed_networks lists it.
var ErrRefused = errors.New("webhook receiver address not allowed")

// ErrInvalidURL is a receiver URL berth cannot deliver to at all.
var ErrInvalidURL = errors.New("invalid webhook URL")

// Resolver looks up a host name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Guard is the address policy of webhook receivers. The zero value allows
// public addresses only, through net.DefaultResolver.
type Guard struct {
	// Allowed are networks allowed although not public
	// (webhooks.allowed_networks), e.g. 127.0.0.0/8 for a receiver on the
	// same machine.
	Allowed []netip.Prefix
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
}

// NewGuard parses the CIDRs of webhooks.allowed_networks.
func NewGuard(allowedCIDRs []string) (Guard, error) {
	var g Guard
	for _, c := range allowedCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return Guard{}, fmt.Errorf("webhooks.allowed_networks: %w", err)
		}
		g.Allowed = append(g.Allowed, p.Masked())
	}
	return g, nil
}

// nonPublic are the ranges refused unless allowed, beyond what netip's
// predicates name: shared address space (RFC 6598), IETF protocol
// assignments, benchmarking, the "this network" block, reserved and
// NAT64/6to4/Teredo forms that embed an IPv4 address.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("100::/64"),
}

// public reports whether a is a global unicast address outside every
// special-purpose range.
func public(a netip.Addr) bool {
	if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsPrivate() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() || !a.IsGlobalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// CheckAddr returns nil if berth may connect to a, else an error wrapping
// ErrRefused.
func (g Guard) CheckAddr(a netip.Addr) error {
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, p := range g.Allowed {
		if p.Contains(a) {
			return nil
		}
	}
	if !public(a) {
		return fmt.Errorf("%w: %s is not a public address and webhooks.allowed_networks does not list it", ErrRefused, a)
	}
	return nil
}

// CheckURL checks a receiver URL: http or https, a host, no user
// information, and every address its host resolves to allowed. Errors wrap
// ErrInvalidURL or ErrRefused; a name that does not resolve is refused.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrInvalidURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: the scheme must be http or https, not %q", ErrInvalidURL, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	case u.User != nil:
		// Credentials in a URL would be shown back by every listing.
		return fmt.Errorf("%w: user information is not allowed; authenticate with the signature", ErrInvalidURL)
	case u.Fragment != "":
		return fmt.Errorf("%w: a fragment is never sent", ErrInvalidURL)
	}
	addrs, err := g.resolve(ctx, u.Hostname())
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			return fmt.Errorf("%s: %w", u.Hostname(), err)
		}
	}
	return nil
}

func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s does not resolve: %w", ErrRefused, host, err)
	case len(addrs) == 0:
		return nil, fmt.Errorf("%w: %s resolves to no address", ErrRefused, host)
	}
	return addrs, nil
}

// Control is a net.Dialer Control function that refuses connections to
// addresses the guard does not allow. It checks the address actually
// dialled, after resolution, so a name that resolved to a public address
// at subscription and to a private one now (DNS rebinding) is refused.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dial %s: %w", ErrRefused, address, err)
	}
	return g.CheckAddr(ap.Addr())
}
