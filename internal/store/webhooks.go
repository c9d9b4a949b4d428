package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/berth-io/berth/internal/container"
)

// Bounds on subscriptions. Every subscription lives in one document (one
// DynamoDB item of at most 400 KB; a subscription takes well under 512
// bytes), and every status change reads that document.
const (
	// MaxWebhooks bounds the subscriptions of a deployment.
	MaxWebhooks = 500
	// MaxWebhooksPerOwner bounds one owner's subscriptions, so that one
	// owner cannot take the whole of MaxWebhooks.
	MaxWebhooksPerOwner = 25
	// MaxAllOwnerWebhooks bounds the admins' subscriptions (those that
	// match every owner's instances), whoever made them. With
	// MaxWebhooksPerOwner it bounds the deliveries one status change
	// writes in its transaction to 50, within DynamoDB's 100 actions.
	MaxAllOwnerWebhooks = 25
)

// ErrWebhookLimit is returned when the owner already has MaxWebhooksPerOwner subscriptions,
// or the deployment MaxWebhooks; nothing was written.
var ErrWebhookLimit = errors.New("too many webhook subscriptions")

// WebhookStore keeps webhook subscriptions (container.Webhook).
type WebhookStore interface {
	// PutWebhook adds a subscription (its ID set by the caller, its
	// CreatedAt by the store) and returns it as stored. ErrAlreadyExists
	// if the ID is taken, ErrWebhookLimit past the bounds.
	PutWebhook(ctx context.Context, w container.Webhook) (container.Webhook, error)
	// GetWebhook returns a subscription or ErrNotFound.
	GetWebhook(ctx context.Context, id string) (container.Webhook, error)
	// ListWebhooks returns the subscriptions of owner (every owner's when
	// owner is empty), oldest first.
	ListWebhooks(ctx context.Context, owner string) ([]container.Webhook, error)
	// DeleteWebhook removes a subscription; ErrNotFound if there is none.
	DeleteWebhook(ctx context.Context, id string) error
}

// AddWebhook is the rule of PutWebhook on a set as read: it returns the set
// with w added (stamped at now) and w as stored, or an error wrapping
// ErrAlreadyExists, ErrWebhookLimit or ErrInvalidParams. It does not touch
// Version: the backend writes the result conditioned on the version read.
func AddWebhook(set container.WebhookSet, w container.Webhook, now time.Time) (container.WebhookSet, container.Webhook, error) {
	if w.ID == "" || w.Owner == "" || w.URL == "" || w.Secret == "" {
		return set, w, fmt.Errorf("put webhook %q: id, owner, url and secret are required: %w", w.ID, ErrInvalidParams)
	}
	owned, allOwners := 0, 0
	for _, x := range set.Items {
		if x.ID == w.ID {
			return set, w, fmt.Errorf("put webhook %q: %w", w.ID, ErrAlreadyExists)
		}
		if x.Owner == w.Owner {
			owned++
		}
		if x.AllOwners {
			allOwners++
		}
	}
	if w.AllOwners && allOwners >= MaxAllOwnerWebhooks {
		return set, w, fmt.Errorf("put webhook: the deployment has %d subscriptions to every owner (at most %d): %w",
			allOwners, MaxAllOwnerWebhooks, ErrWebhookLimit)
	}
	if owned >= MaxWebhooksPerOwner {
		return set, w, fmt.Errorf("put webhook: %s has %d subscriptions (at most %d): %w", w.Owner, owned, MaxWebhooksPerOwner, ErrWebhookLimit)
	}
	if len(set.Items) >= MaxWebhooks {
		return set, w, fmt.Errorf("put webhook: the deployment has %d subscriptions (at most %d): %w", len(set.Items), MaxWebhooks, ErrWebhookLimit)
	}
	w = w.Clone()
	w.CreatedAt = now.UTC()
	set.Items = append(slices.Clone(set.Items), w)
	return set, w, nil
}

// RemoveWebhook is the rule of DeleteWebhook on a set as read: the set
// without id, or an error wrapping ErrNotFound.
func RemoveWebhook(set container.WebhookSet, id string) (container.WebhookSet, error) {
	i := slices.IndexFunc(set.Items, func(w container.Webhook) bool { return w.ID == id })
	if i < 0 {
		return set, fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	set.Items = slices.Delete(slices.Clone(set.Items), i, i+1)
	return set, nil
}

// FindWebhook returns the subscription id of a set, or ErrNotFound.
func FindWebhook(set container.WebhookSet, id string) (container.Webhook, error) {
	for _, w := range set.Items {
		if w.ID == id {
			return w.Clone(), nil
		}
	}
	return container.Webhook{}, fmt.Errorf("webhook %q: %w", id, ErrNotFound)
}

// OwnedWebhooks returns the subscriptions of owner in a set (all of them
// for an empty owner), in the set's order (oldest first).
func OwnedWebhooks(set container.WebhookSet, owner string) []container.Webhook {
	out := []container.Webhook{}
	for _, w := range set.Items {
		if owner == "" || w.Owner == owner {
			out = append(out, w.Clone())
		}
	}
	return out
}
