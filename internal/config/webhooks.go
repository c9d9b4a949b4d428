package config

import (
	"fmt"
	"net/netip"
)

// Webhooks is the `webhooks:` section: where webhook notifications may be
// delivered.
type Webhooks struct {
	// AllowedNetworks are CIDRs of receivers allowed although not public
	// (loopback, link-local, private and shared ranges are refused
	// otherwise), e.g. 127.0.0.0/8 for a receiver on the same machine.
	// Defaults to none.
	AllowedNetworks []string `yaml:"allowed_networks"`
	// EventBus, when set, is the EventBridge bus (name or ARN; "default"
	// for the account's default bus) every status change is also put on.
	// The AWS stack sets it (parameter EventBusName, "default" unless
	// given). Defaults to "" (none).
	EventBus string `yaml:"event_bus"`
}

func (c *checker) webhooks(w *Webhooks) {
	for i, cidr := range w.AllowedNetworks {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			c.fail(fmt.Sprintf("webhooks.allowed_networks[%d]", i), "must be a CIDR such as 127.0.0.0/8, got %q", cidr)
		}
	}
}
