package eventbus

import (
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// Source is the source of every event berth puts on a bus.
const Source = "berth"

// Detail-types: an instance's create (from no status to pending), a
// status change's event, an instance's removal (after deleting; its
// status is then empty), and a group's finish (GroupDetail).
const (
	DetailTypeCreated       = "Container Created"
	DetailTypeStatusChange  = "Container Status Change"
	DetailTypeDeleted       = "Container Deleted"
	DetailTypeGroupFinished = "Group Finished"
)

// detailTypes names each delivery kind as the event's detail-type.
var detailTypes = map[container.DeliveryKind]string{
	container.DeliveryCreated:       DetailTypeCreated,
	container.DeliveryStatusChanged: DetailTypeStatusChange,
	container.DeliveryDeleted:       DetailTypeDeleted,
	container.DeliveryGroupFinished: DetailTypeGroupFinished,
}

// DetailType is the detail-type of a delivery's event.
func DetailType(d container.Delivery) string { return detailTypes[d.Kind()] }

// Detail is the detail of a status change's event, as JSON.
type Detail struct {
	// Instance is the instance as the change left it, as the API shows it.
	Instance       container.Instance `json:"instance"`
	PreviousStatus fsm.Status         `json:"previous_status"`
	Status         fsm.Status         `json:"status"`
	Reason         string             `json:"reason,omitempty"`
	// Seq is the change's event number: per instance it increases with
	// every change, so a consumer restores the order and drops duplicates.
	Seq int64 `json:"seq"`
	// DeliveryID is the outbox item's id, the same on every attempt: a
	// duplicate carries the same one.
	DeliveryID string `json:"delivery_id"`
}

// GroupDetail is the detail of a group finish's event, as JSON.
type GroupDetail struct {
	// Group is the finish as its answer (POST /api/groups/{group}/finish)
	// shows it.
	Group container.GroupResult `json:"group"`
	// DeliveryID is the outbox item's id, the same on every attempt.
	DeliveryID string `json:"delivery_id"`
}
