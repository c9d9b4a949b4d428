package webhook

import "net/netip"

// refusedRange is one address block a receiver may not be in unless
// webhooks.allowed_networks lists it.
type refusedRange struct {
	prefix netip.Prefix
	// name is the rule a refusal names (the 422 says it, never the
	// address a name resolved to).
	name string
	// embedsIPv4: the block's addresses carry an IPv4 address in their
	// last 32 bits and reach it (IPv4-mapped, NAT64's well-known prefix),
	// so that IPv4 address is judged instead of the block refusing.
	embedsIPv4 bool
}

// refuse is a refusedRange judged as a whole.
func refuse(cidr, name string) refusedRange {
	return refusedRange{prefix: netip.MustParsePrefix(cidr), name: name}
}

// refusedRanges is the one list of refused addresses, checked by Guard
// and listed in docs/api.md (TestRefusedRangesDocumented keeps the two
// the same). It holds the IANA special-purpose registries (RFC 6890 and
// later: IPv4 and IPv6, including the blocks the registries mark global,
// which are anycast services and documentation, never a receiver),
// multicast, the deprecated site-local and IPv4-compatible blocks, and
// every IPv6 address outside 2000::/3, where IANA allocates no global
// unicast. The most specific block containing an address decides, so a
// narrower block inside a wider one only names the rule more precisely.
// 6to4 and Teredo are refused whole: their embedded IPv4 address is a
// relay's, not the receiver's, and both are deprecated.
var refusedRanges = []refusedRange{
	refuse("0.0.0.0/8", "this network"),
	refuse("0.0.0.0/32", "unspecified"),
	refuse("10.0.0.0/8", "private"),
	refuse("100.64.0.0/10", "shared address space"),
	refuse("127.0.0.0/8", "loopback"),
	refuse("169.254.0.0/16", "link-local, instance metadata"),
	refuse("172.16.0.0/12", "private"),
	refuse("192.0.0.0/24", "IETF protocol assignments"),
	refuse("192.0.2.0/24", "documentation (TEST-NET-1)"),
	refuse("192.31.196.0/24", "AS112"),
	refuse("192.52.193.0/24", "AMT"),
	refuse("192.88.99.0/24", "6to4 relay anycast"),
	refuse("192.168.0.0/16", "private"),
	refuse("192.175.48.0/24", "AS112"),
	refuse("198.18.0.0/15", "benchmarking"),
	refuse("198.51.100.0/24", "documentation (TEST-NET-2)"),
	refuse("203.0.113.0/24", "documentation (TEST-NET-3)"),
	refuse("224.0.0.0/4", "multicast"),
	refuse("240.0.0.0/4", "reserved"),
	refuse("255.255.255.255/32", "limited broadcast"),

	refuse("::/3", "outside IPv6 global unicast (2000::/3)"),
	refuse("::/128", "unspecified"),
	refuse("::1/128", "loopback"),
	refuse("::/96", "IPv4-compatible (deprecated)"),
	{prefix: netip.MustParsePrefix("::ffff:0:0/96"), name: "IPv4-mapped", embedsIPv4: true},
	refuse("::ffff:0:0:0/96", "IPv4-translated (SIIT)"),
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "NAT64", embedsIPv4: true},
	refuse("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
	refuse("100::/64", "discard-only"),
	refuse("100:0:0:1::/64", "dummy prefix"),
	refuse("2001::/23", "IETF protocol assignments"),
	refuse("2001::/32", "Teredo"),
	refuse("2001:2::/48", "benchmarking"),
	refuse("2001:db8::/32", "documentation"),
	refuse("2002::/16", "6to4"),
	refuse("2620:4f:8000::/48", "AS112"),
	refuse("3fff::/20", "documentation"),
	refuse("4000::/2", "outside IPv6 global unicast (2000::/3)"),
	refuse("5f00::/16", "segment routing SIDs"),
	refuse("8000::/1", "outside IPv6 global unicast (2000::/3)"),
	refuse("fc00::/7", "unique local"),
	refuse("fe80::/10", "link-local"),
	refuse("fec0::/10", "site-local (deprecated)"),
	refuse("ff00::/8", "multicast"),
}

// refusedRangeOf returns the most specific refused range holding a (which
// carries no zone).
func refusedRangeOf(a netip.Addr) (refusedRange, bool) {
	var best refusedRange
	found := false
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}
