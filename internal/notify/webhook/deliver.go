package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Payload types: the create of an instance (from no status to pending),
// a status change, the removal of an instance (after deleting: its
// status is then empty and its instance as last stored), and a group's
// finish (GroupPayload).
const (
	EventCreated       = "container.created"
	EventStatusChanged = "container.status_changed"
	EventDeleted       = "container.deleted"
	EventGroupFinished = "group.finished"
)

// eventTypes names each delivery kind as the payload's type.
var eventTypes = map[container.DeliveryKind]string{
	container.DeliveryCreated:       EventCreated,
	container.DeliveryStatusChanged: EventStatusChanged,
	container.DeliveryDeleted:       EventDeleted,
	container.DeliveryGroupFinished: EventGroupFinished,
}

// EventType is the payload type of a delivery.
func EventType(d container.Delivery) string { return eventTypes[d.Kind()] }

// Payload is a delivery's JSON body, in the Standard Webhooks shape (type,
// timestamp, data).
type Payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Change    `json:"data"`
}

// Change is the status change a delivery reports.
type Change struct {
	WebhookID string `json:"webhook_id"`
	// Instance is the instance as the change left it, as the API shows it.
	Instance       container.Instance `json:"instance"`
	PreviousStatus fsm.Status         `json:"previous_status"`
	Status         fsm.Status         `json:"status"`
	Reason         string             `json:"reason,omitempty"`
	// Seq is the change's event number: per instance it increases with
	// every change, so a receiver restores the order and drops duplicates
	// (which also share their webhook-id header).
	Seq int64 `json:"seq"`
}

// GroupPayload is the JSON body of a group finish's delivery
// (EventGroupFinished), in the Standard Webhooks shape.
type GroupPayload struct {
	Type      string        `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Data      GroupFinished `json:"data"`
}

// GroupFinished is the group finish a delivery reports.
type GroupFinished struct {
	WebhookID string `json:"webhook_id"`
	// Group is the finish as its answer (POST /api/groups/{group}/finish)
	// shows it: the group, its owner, the outcome, the policy applied and
	// what it did to each member.
	Group container.GroupResult `json:"group"`
}

// Subscriptions reads subscriptions (store.Store is one).
type Subscriptions interface {
	GetWebhook(ctx context.Context, id string) (container.Webhook, error)
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "webhook receiver answered " + strconv.Itoa(e.Code) }

// Deliverer POSTs deliveries (container.OpDeliver outbox items) to their
// subscriptions' receivers, signed with the subscription's secret.
type Deliverer struct {
	Subscriptions Subscriptions
	Guard         Guard
	// Client defaults to NewClient(Guard, DefaultTimeout); a client given
	// here must check addresses itself.
	Client *http.Client
	// Clock defaults to time.Now.
	Clock func() time.Time
	// Limiter, when set, bounds each subscription owner's deliveries in
	// flight: a delivery over its owner's share is not attempted and
	// answers a *BusyError.
	Limiter Limiter
}

// Body returns the payload of a delivery item, as JSON.
func Body(item container.OutboxItem, at time.Time) ([]byte, error) {
	d := item.Delivery
	if d != nil && d.Group != nil {
		return json.Marshal(GroupPayload{Type: EventGroupFinished, Timestamp: at.UTC(),
			Data: GroupFinished{WebhookID: d.WebhookID, Group: *d.Group}})
	}
	if d == nil || d.Instance == nil {
		return nil, fmt.Errorf("outbox item %s carries no delivery", item.ID)
	}
	return json.Marshal(Payload{Type: EventType(*d), Timestamp: at.UTC(), Data: Change{
		WebhookID: d.WebhookID, Instance: *d.Instance, PreviousStatus: d.From, Status: d.To, Reason: d.Reason, Seq: d.Seq,
	}})
}

// Deliver makes one attempt at a delivery: nil when the receiver answered
// 2xx; an error wrapping the subscription store's not-found error when the
// subscription is gone (nothing to deliver to); a *BusyError when its
// owner has its share in flight (Limiter; nothing attempted); any other
// error is a failed attempt (refused address, connection, timeout, redirect, non-2xx).
// The webhook-id is the item's id, the same on every attempt.
func (d *Deliverer) Deliver(ctx context.Context, item container.OutboxItem) error {
	if item.Delivery == nil {
		return fmt.Errorf("outbox item %s carries no delivery", item.ID)
	}
	sub, err := d.Subscriptions.GetWebhook(ctx, item.Delivery.WebhookID)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", item.Delivery.WebhookID, err)
	}
	release, err := d.slot(ctx, sub, item.ID)
	if err != nil {
		return err
	}
	defer release()
	// Checked again now: the name may resolve elsewhere since the
	// subscription, or the deployment's allowed networks may have changed.
	if err := d.Guard.CheckURL(ctx, sub.URL); err != nil {
		return err
	}
	now := time.Now
	if d.Clock != nil {
		now = d.Clock
	}
	at := now()
	body, err := Body(item, item.CreatedAt)
	if err != nil {
		return err
	}
	sig, err := Sign(sub.Secret, item.ID, at, body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "berth-webhooks/1")
	req.Header.Set(HeaderID, item.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	client := d.Client
	if client == nil {
		client = NewClient(d.Guard, DefaultTimeout)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", sub.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return fmt.Errorf("POST %s: %w (%d)", sub.URL, ErrRedirect, resp.StatusCode)
		}
		return fmt.Errorf("POST %s: %w", sub.URL, &StatusError{Code: resp.StatusCode})
	}
	return nil
}

// slot takes a delivery slot of sub's owner for this attempt of the
// delivery holder (Limiter): the function giving it back, or a *BusyError
// when the owner's are all held.
//
// Each attempt holds its own slot (the holder and a new id): a duplicate
// of a delivery whose first attempt still waits on its receiver (SQS
// redelivers a message after its visibility timeout) takes a second slot
// rather than renewing the first, so the owner's share bounds attempts in
// flight, duplicates included. (With one slot per delivery, a hanging
// receiver's redelivered deliveries held every notify environment of the
// emulated stack.) A crashed attempt's slot runs out after the lease hold.
func (d *Deliverer) slot(ctx context.Context, sub container.Webhook, holder string) (func(), error) {
	if d.Limiter == nil {
		return func() {}, nil
	}
	release, ok, err := d.Limiter.Acquire(ctx, sub.Owner, holder+"#"+container.NewID())
	switch {
	case err != nil:
		return nil, fmt.Errorf("webhook %s: delivery slot of %s: %w", sub.ID, sub.Owner, err)
	case !ok:
		return nil, &BusyError{Owner: sub.Owner}
	}
	return release, nil
}
