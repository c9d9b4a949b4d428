package httpapi

import (
	"net/http"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/notify/webhook"
)

// Delivery statuses as the API shows them: an outbox item pending or
// dispatched is still pending for its receiver.
const (
	deliveryPending   = "pending"
	deliveryDelivered = "delivered"
	deliveryFailed    = "failed"
)

// deliveryBody is one webhook delivery as the API shows it: the change it
// reports and how its sending went, never the payload's instance (GET
// /api/containers/{id} shows that) nor anything of the subscription's.
type deliveryBody struct {
	// ID is the delivery's webhook-id header, the same on every attempt
	// and on a redelivery.
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	// Type is the payload's type (webhook.EventType).
	Type string `json:"type"`
	// Group names the finished group of a group.finished delivery, whose
	// instance_id is the member whose write carried it.
	Group      string     `json:"group,omitempty"`
	InstanceID string     `json:"instance_id"`
	Seq        int64      `json:"seq"`
	From       fsm.Status `json:"from"`
	To         fsm.Status `json:"to"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"last_error,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

func deliveryView(ob container.OutboxItem) deliveryBody {
	status := deliveryPending
	switch ob.State {
	case container.OutboxDone:
		status = deliveryDelivered
	case container.OutboxFailed:
		status = deliveryFailed
	}
	b := deliveryBody{ID: ob.ID, InstanceID: ob.InstanceID, Status: status, Attempts: ob.Attempts,
		LastError: ob.LastError, CreatedAt: ob.CreatedAt, UpdatedAt: ob.UpdatedAt}
	if d := ob.Delivery; d != nil {
		b.WebhookID, b.Seq, b.From, b.To, b.Type = d.WebhookID, d.Seq, d.From, d.To, webhook.EventType(*d)
		if d.Group != nil {
			b.Group = d.Group.Group
		}
	}
	return b
}

// listDeliveries is GET /api/webhooks/{id}/deliveries: a page of the
// subscription's deliveries, newest first.
func (h *handler) listDeliveries(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		return &badRequest{msg: "invalid query parameters", fields: fieldErr("limit", err.Error())}
	}
	id := r.PathValue("id")
	scope := cursorScope{User: c.User, Kind: "deliveries", Filter: id}
	cursor, err := decodeCursor(q.Get("cursor"), scope)
	if err != nil {
		return err
	}
	page, err := h.m.ListDeliveries(r.Context(), c, id, cursor, limit)
	if err != nil {
		return err
	}
	items := make([]deliveryBody, len(page.Items))
	for i, ob := range page.Items {
		items[i] = deliveryView(ob)
	}
	writeJSON(w, http.StatusOK, listBody[deliveryBody]{Items: items, NextCursor: encodeCursor(page.NextCursor, scope)})
	return nil
}

// redeliver is POST /api/webhooks/{id}/deliveries/{delivery_id}/redeliver:
// 202 with the delivery, pending again (or still pending: a repeat sends
// once).
func (h *handler) redeliver(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	ob, err := h.m.Redeliver(r.Context(), c, r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, deliveryView(ob))
	return nil
}
