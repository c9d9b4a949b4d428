package webhook_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/notify/webhook"
)

// fixedResolver answers every name with its addresses, or its error.
type fixedResolver struct {
	addrs []netip.Addr
	err   error
}

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.addrs, r.err
}

// TestRefusalHidesWhatNamesResolveTo: a refused name's error (which the
// API's 422 quotes) names the host and the rule, never the address the
// name resolved to nor the resolver's error, which would make the check a
// DNS oracle into the deployment's network; the RefusedError keeps the
// address for the server's log.
func TestRefusalHidesWhatNamesResolveTo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resolver fixedResolver
		url      string
		want     string // in the message
		hidden   string // never in the message
		addr     string // RefusedError.Addr; "" for none
	}{
		{"private", fixedResolver{addrs: []netip.Addr{netip.MustParseAddr("10.9.8.7")}},
			"https://db.corp.example/", "db.corp.example resolves to a refused range (private)", "10.9.8.7", "10.9.8.7"},
		{"mapped loopback", fixedResolver{addrs: []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("::ffff:127.0.0.2")}},
			"https://mixed.example/", "mixed.example resolves to a refused range (loopback in IPv4-mapped)", "127.0.0.2", "::ffff:127.0.0.2"},
		{"does not resolve", fixedResolver{err: errors.New("lookup x.example on 10.0.0.2:53: no such host")},
			"https://x.example/", "x.example: the name does not resolve", "10.0.0.2", ""},
		{"no address", fixedResolver{},
			"https://empty.example/", "empty.example: the name resolves to no address", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := webhook.Guard{Resolver: tc.resolver}.CheckURL(context.Background(), tc.url)
			var re *webhook.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, webhook.ErrRefused) {
				t.Fatalf("CheckURL(%q) = %v; want a RefusedError", tc.url, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || tc.hidden != "" && strings.Contains(msg, tc.hidden) {
				t.Errorf("message %q: want it to say %q and not %q", msg, tc.want, tc.hidden)
			}
			if got := re.Addr; tc.addr == "" && got.IsValid() || tc.addr != "" && got != netip.MustParseAddr(tc.addr) {
				t.Errorf("Addr = %v; want %q", got, tc.addr)
			}
		})
	}
}

// TestRefusalOfALiteralNamesIt: an address the URL gives itself is named
// (the caller wrote it) with its rule.
func TestRefusalOfALiteralNamesIt(t *testing.T) {
	err := webhook.Guard{}.CheckURL(context.Background(), "http://[::127.0.0.1]/")
	if want := "::127.0.0.1 is in a refused range (IPv4-compatible (deprecated))"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckURL = %v; want it to say %q", err, want)
	}
}

// TestLookupCutShortIsNotARefusal: a lookup failing because the request
// ended says so, and is not a name that does not resolve (422).
func TestLookupCutShortIsNotARefusal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := webhook.Guard{Resolver: fixedResolver{err: context.Canceled}}
	if err := g.CheckURL(ctx, "https://hooks.example/"); !errors.Is(err, context.Canceled) || errors.Is(err, webhook.ErrRefused) {
		t.Errorf("CheckURL with the request ended = %v; want context.Canceled, not ErrRefused", err)
	}
}
