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

// ErrRefused is a receiver address the deployment does not allow: one in
// a refused range (loopback, link-local with the instance metadata address
// 169.254.169.254, private, shared, multicast, documentation, reserved and
// the other special-purpose blocks of docs/api.md), or a name that
// resolves to one or does not resolve, unless webhooks.allowed_networks
// lists it.
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

// CheckAddr returns nil if berth may connect to a, else a *RefusedError
// (wrapping ErrRefused).
func (g Guard) CheckAddr(a netip.Addr) error { return g.check(a.String(), a, false) }

// check refuses a, the address host is (or, resolved, resolves to), if
// the policy does.
func (g Guard) check(host string, a netip.Addr, resolved bool) error {
	if rule, refused := g.refuses(a); refused {
		return &RefusedError{Host: host, Addr: a, Rule: rule, Resolved: resolved}
	}
	return nil
}

// refuses returns the rule that refuses a, if one does: a is in none of
// the allowed networks and in a refused range (an address embedding an
// IPv4 one is refused as that IPv4 address is).
func (g Guard) refuses(a netip.Addr) (rule string, refused bool) {
	// A zone names an interface, not another address; and
	// netip.Prefix.Contains never holds a zoned address.
	a = a.WithZone("")
	for _, p := range g.Allowed {
		if p.Contains(a) {
			return "", false
		}
	}
	r, ok := refusedRangeOf(a)
	switch {
	case !ok:
		return "", false
	case !r.embedsIPv4:
		return r.name, true
	}
	b := a.As16()
	inner, refused := g.refuses(netip.AddrFrom4([4]byte(b[12:])))
	if !refused {
		return "", false
	}
	return inner + " in " + r.name, true
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
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return g.check(host, a, false)
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := g.check(host, a, true); err != nil {
			return err
		}
	}
	return nil
}

// lookup resolves a host name; a name without addresses is refused, and
// so is one the resolver fails on while ctx lasts.
func (g Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	switch {
	case err != nil && ctx.Err() != nil:
		// The request ended or ran out of time: not the name's fault.
		return nil, fmt.Errorf("resolving %s: %w", host, ctx.Err())
	case err != nil:
		return nil, &RefusedError{Host: host, Rule: "the name does not resolve", Cause: err}
	case len(addrs) == 0:
		return nil, &RefusedError{Host: host, Rule: "the name resolves to no address"}
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
