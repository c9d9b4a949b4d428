package eventbus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/berth-io/berth/internal/container"
)

// Entry is the event of a delivery item (a container.OpDeliver outbox
// item addressed to container.EventBusTarget): the change at the time it
// was written.
func Entry(item container.OutboxItem) (types.PutEventsRequestEntry, error) {
	d := item.Delivery
	var detail []byte
	var err error
	switch {
	case d != nil && d.Group != nil:
		detail, err = json.Marshal(GroupDetail{Group: *d.Group, DeliveryID: item.ID})
	case d == nil || d.Instance == nil:
		return types.PutEventsRequestEntry{}, fmt.Errorf("outbox item %s carries no delivery", item.ID)
	default:
		detail, err = json.Marshal(Detail{
			Instance: *d.Instance, PreviousStatus: d.From, Status: d.To, Reason: d.Reason, Seq: d.Seq, DeliveryID: item.ID,
		})
	}
	if err != nil {
		return types.PutEventsRequestEntry{}, fmt.Errorf("event of outbox item %s: %w", item.ID, err)
	}
	e := types.PutEventsRequestEntry{
		Source: aws.String(Source), DetailType: aws.String(DetailType(*d)), Detail: aws.String(string(detail)),
	}
	if !item.CreatedAt.IsZero() {
		e.Time = aws.Time(item.CreatedAt.UTC())
	}
	return e, nil
}

// Deliverer puts delivery items on a bus, one event each; it is the
// worker's event-bus deliverer (worker.Deliverer). An error is a failed
// attempt, which the worker retries as it retries a webhook delivery.
type Deliverer struct {
	Publisher *Publisher
}

// Deliver puts item's event on the bus.
func (d *Deliverer) Deliver(ctx context.Context, item container.OutboxItem) error {
	e, err := Entry(item)
	if err != nil {
		return err
	}
	_, err = d.Publisher.Publish(ctx, []types.PutEventsRequestEntry{e})
	return err
}
