package config

import (
	"fmt"
	"net/netip"
	"time"
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
	// RetryBackoff is the delay before a failed delivery's first retry;
	// it doubles with each retry up to RetryBackoffMax, for 48 h. Defaults
	// to DefaultWebhookRetryBackoff.
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	// RetryBackoffMax caps the delay between a delivery's retries; at most
	// MaxWebhookRetryBackoff. Defaults to DefaultWebhookRetryBackoffMax.
	RetryBackoffMax time.Duration `yaml:"retry_backoff_max"`
}

// Defaults and bounds of the webhooks section's retry keys.
const (
	// DefaultWebhookRetryBackoff is webhooks.retry_backoff's default.
	DefaultWebhookRetryBackoff = 2 * time.Second
	// DefaultWebhookRetryBackoffMax is webhooks.retry_backoff_max's
	// default.
	DefaultWebhookRetryBackoffMax = 5 * time.Minute
	// MaxWebhookRetryBackoff bounds both: a queue delays a message by at
	// most 15 minutes (SQS DelaySeconds).
	MaxWebhookRetryBackoff = 15 * time.Minute
)

func (c *checker) webhooks(w *Webhooks) {
	c.positive("webhooks.retry_backoff", w.RetryBackoff)
	c.positive("webhooks.retry_backoff_max", w.RetryBackoffMax)
	if w.RetryBackoffMax < w.RetryBackoff {
		c.fail("webhooks.retry_backoff_max", "must be at least webhooks.retry_backoff (%s), got %s", w.RetryBackoff, w.RetryBackoffMax)
	}
	if w.RetryBackoffMax > MaxWebhookRetryBackoff {
		c.fail("webhooks.retry_backoff_max", "must be at most %s, got %s", MaxWebhookRetryBackoff, w.RetryBackoffMax)
	}
	for i, cidr := range w.AllowedNetworks {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			c.fail(fmt.Sprintf("webhooks.allowed_networks[%d]", i), "must be a CIDR such as 127.0.0.0/8, got %q", cidr)
		}
	}
}
