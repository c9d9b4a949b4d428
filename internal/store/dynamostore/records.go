package dynamostore

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// timeLayout is fixed width and UTC, so stored times sort as strings (the
// undispatched index sorts on it) and round-trip to the nanosecond.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return fmtTime(*t)
}

func parseTimePtr(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := parseTime(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ttl returns the TTL attribute value for an item that may be removed from
// t on: epoch seconds rounded up, so TTL never removes an item early.
func ttl(t time.Time) int64 {
	return int64(math.Ceil(float64(t.UnixNano()) / float64(time.Second)))
}

// instanceItem is an instance as stored. Spec is kept as its JSON text: the
// store never filters on it, and its JSON tags already define its shape.
// Owner is omitted when empty because an index key may not be "".
type instanceItem struct {
	ID        string            `dynamodbav:"id"`
	Name      string            `dynamodbav:"name,omitempty"`
	Owner     string            `dynamodbav:"owner,omitempty"`
	Template  string            `dynamodbav:"template,omitempty"`
	Group     string            `dynamodbav:"group,omitempty"`
	Team      string            `dynamodbav:"team,omitempty"`
	Labels    map[string]string `dynamodbav:"labels"`
	Runtime   string            `dynamodbav:"runtime,omitempty"`
	Image     string            `dynamodbav:"image,omitempty"`
	Status    string            `dynamodbav:"status"`
	StatusKey string            `dynamodbav:"status_key"`
	// NodeBucket is the sparse by_node_bucket key, set only while the
	// instance is active (nodeBucketKey).
	NodeBucket      string `dynamodbav:"node_bucket,omitempty"`
	StatusReason    string `dynamodbav:"status_reason,omitempty"`
	ExitCode        *int   `dynamodbav:"exit_code,omitempty"`
	RuntimeID       string `dynamodbav:"runtime_id,omitempty"`
	RuntimeNodeName string `dynamodbav:"runtime_node_name,omitempty"`
	CreatedAt       string `dynamodbav:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at"`
	StartedAt       string `dynamodbav:"started_at,omitempty"`
	FinishedAt      string `dynamodbav:"finished_at,omitempty"`
	Version         int64  `dynamodbav:"version"`
	EventSeq        int64  `dynamodbav:"event_seq"`
	Spec            string `dynamodbav:"spec"`
	// Endpoints is the instance's container.Endpoints as JSON, like Spec.
	Endpoints string `dynamodbav:"endpoints,omitempty"`
	// QuotaCounted is container.Instance.QuotaCounted.
	QuotaCounted bool `dynamodbav:"quota_counted,omitempty"`
	// UsageCounted is container.Instance.UsageCounted.
	UsageCounted bool `dynamodbav:"usage_counted,omitempty"`
	// LifetimeExpiresAt is ExpiresAt (not named expires_at: that name is
	// the TTL attribute of berth's other tables), Lifetime its
	// container.InstanceLifetime as JSON.
	LifetimeExpiresAt string `dynamodbav:"lifetime_expires_at,omitempty"`
	Lifetime          string `dynamodbav:"lifetime,omitempty"`
	// DeleteAt is container.Instance.DeleteAt, Retention its
	// container.Retention as JSON.
	DeleteAt  string `dynamodbav:"delete_at,omitempty"`
	Retention string `dynamodbav:"retention,omitempty"`
	// DeadlineShard and DeadlineKey are the sparse by_deadline keys,
	// set only while the instance has a deadline.
	DeadlineShard string `dynamodbav:"deadline_shard,omitempty"`
	DeadlineKey   string `dynamodbav:"deadline_key,omitempty"`
	// Restart is container.Instance.Restart as JSON; Restarts, LastExit
	// and RestartAt the instance's.
	Restart   string `dynamodbav:"restart,omitempty"`
	Restarts  int    `dynamodbav:"restarts,omitempty"`
	LastExit  *int   `dynamodbav:"last_exit,omitempty"`
	RestartAt string `dynamodbav:"restart_at,omitempty"`
}

func marshalInstance(in container.Instance) (map[string]types.AttributeValue, error) {
	spec, err := json.Marshal(in.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode spec of instance %q: %w", in.ID, err)
	}
	it := instanceItem{
		ID: in.ID, Name: in.Name, Owner: in.Owner, Template: in.Template, Group: in.Group, Team: in.Team,
		QuotaCounted: in.QuotaCounted, UsageCounted: in.UsageCounted, Labels: in.Labels, Runtime: in.Runtime, Image: in.Image, Status: string(in.Status),
		StatusKey: statusKey(in.Status, in.ID), NodeBucket: nodeBucketKey(in), StatusReason: in.StatusReason, ExitCode: in.ExitCode, RuntimeID: in.RuntimeID,
		RuntimeNodeName: in.RuntimeNodeName, CreatedAt: fmtTime(in.CreatedAt), UpdatedAt: fmtTime(in.UpdatedAt),
		StartedAt: fmtTimePtr(in.StartedAt), FinishedAt: fmtTimePtr(in.FinishedAt),
		Version: in.Version, EventSeq: in.EventSeq, Spec: string(spec),
	}
	if len(in.Endpoints) > 0 {
		eps, err := json.Marshal(in.Endpoints)
		if err != nil {
			return nil, fmt.Errorf("encode endpoints of instance %q: %w", in.ID, err)
		}
		it.Endpoints = string(eps)
	}
	it.LifetimeExpiresAt = fmtTimePtr(in.ExpiresAt)
	if in.Lifetime != nil {
		lt, err := json.Marshal(in.Lifetime)
		if err != nil {
			return nil, fmt.Errorf("encode lifetime of instance %q: %w", in.ID, err)
		}
		it.Lifetime = string(lt)
	}
	it.DeleteAt = fmtTimePtr(in.DeleteAt)
	if at := in.Deadline(); at != nil {
		it.DeadlineShard, it.DeadlineKey = deadlineShard(in.ID), deadlineKey(*at, in.ID)
	}
	if err := marshalRestart(&it, in); err != nil {
		return nil, err
	}
	if in.Retention != nil {
		r, err := json.Marshal(in.Retention)
		if err != nil {
			return nil, fmt.Errorf("encode retention of instance %q: %w", in.ID, err)
		}
		it.Retention = string(r)
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode instance %q: %w", in.ID, err)
	}
	return av, nil
}

func unmarshalInstance(av map[string]types.AttributeValue) (container.Instance, error) {
	var it instanceItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return container.Instance{}, fmt.Errorf("decode instance: %w", err)
	}
	in := container.Instance{
		ID: it.ID, Name: it.Name, Owner: it.Owner, Template: it.Template, Group: it.Group, Team: it.Team,
		QuotaCounted: it.QuotaCounted, UsageCounted: it.UsageCounted, Labels: it.Labels, Runtime: it.Runtime, Image: it.Image, Status: fsm.Status(it.Status),
		StatusReason: it.StatusReason, ExitCode: it.ExitCode, RuntimeID: it.RuntimeID,
		RuntimeNodeName: it.RuntimeNodeName, Version: it.Version, EventSeq: it.EventSeq,
	}
	var err error
	if in.CreatedAt, err = parseTime(it.CreatedAt); err != nil {
		return in, fmt.Errorf("decode instance %q created_at: %w", it.ID, err)
	}
	if in.UpdatedAt, err = parseTime(it.UpdatedAt); err != nil {
		return in, fmt.Errorf("decode instance %q updated_at: %w", it.ID, err)
	}
	if in.StartedAt, err = parseTimePtr(it.StartedAt); err != nil {
		return in, fmt.Errorf("decode instance %q started_at: %w", it.ID, err)
	}
	if in.FinishedAt, err = parseTimePtr(it.FinishedAt); err != nil {
		return in, fmt.Errorf("decode instance %q finished_at: %w", it.ID, err)
	}
	if it.Spec != "" {
		if err := json.Unmarshal([]byte(it.Spec), &in.Spec); err != nil {
			return in, fmt.Errorf("decode instance %q spec: %w", it.ID, err)
		}
	}
	if it.Endpoints != "" {
		if err := json.Unmarshal([]byte(it.Endpoints), &in.Endpoints); err != nil {
			return in, fmt.Errorf("decode instance %q endpoints: %w", it.ID, err)
		}
	}
	if in.ExpiresAt, err = parseTimePtr(it.LifetimeExpiresAt); err != nil {
		return in, fmt.Errorf("decode instance %q lifetime_expires_at: %w", it.ID, err)
	}
	if it.Lifetime != "" {
		in.Lifetime = &container.InstanceLifetime{}
		if err := json.Unmarshal([]byte(it.Lifetime), in.Lifetime); err != nil {
			return in, fmt.Errorf("decode instance %q lifetime: %w", it.ID, err)
		}
	}
	if in.DeleteAt, err = parseTimePtr(it.DeleteAt); err != nil {
		return in, fmt.Errorf("decode instance %q delete_at: %w", it.ID, err)
	}
	if it.Retention != "" {
		in.Retention = &container.Retention{}
		if err := json.Unmarshal([]byte(it.Retention), in.Retention); err != nil {
			return in, fmt.Errorf("decode instance %q retention: %w", it.ID, err)
		}
	}
	return in, unmarshalRestart(it, &in)
}

// eventItem is an event as stored. The item at seq 0 is not an event but the
// deletion marker of a deleted instance: it holds DeletedAt.
type eventItem struct {
	InstanceID string `dynamodbav:"instance_id"`
	Seq        int64  `dynamodbav:"seq"`
	Type       string `dynamodbav:"type,omitempty"`
	From       string `dynamodbav:"from,omitempty"`
	To         string `dynamodbav:"to,omitempty"`
	At         string `dynamodbav:"at,omitempty"`
	Message    string `dynamodbav:"message,omitempty"`
	ExitCode   *int   `dynamodbav:"exit_code,omitempty"`
	Actor      string `dynamodbav:"actor,omitempty"`
	OnBehalfOf string `dynamodbav:"on_behalf_of,omitempty"`
	// LastWords is the event's container.LastWords as JSON (like an
	// instance's spec): one string attribute, whatever the lines hold.
	LastWords string `dynamodbav:"last_words,omitempty"`
	DeletedAt string `dynamodbav:"deleted_at,omitempty"`
	ExpiresAt int64  `dynamodbav:"expires_at,omitempty"`
}

// markerSeq is the sort key of a deleted instance's deletion marker.
const markerSeq = 0

func marshalEvent(ev container.Event, expiresAt int64) (map[string]types.AttributeValue, error) {
	it := eventItem{
		InstanceID: ev.InstanceID, Seq: ev.Seq, Type: ev.Type, From: string(ev.From), To: string(ev.To),
		At: fmtTime(ev.At), Message: ev.Message, ExitCode: ev.ExitCode, Actor: ev.Actor, OnBehalfOf: ev.OnBehalfOf,
		ExpiresAt: expiresAt,
	}
	if ev.LastWords != nil {
		b, err := json.Marshal(ev.LastWords)
		if err != nil {
			return nil, fmt.Errorf("encode event %s/%d last words: %w", ev.InstanceID, ev.Seq, err)
		}
		it.LastWords = string(b)
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode event %s/%d: %w", ev.InstanceID, ev.Seq, err)
	}
	return av, nil
}

func unmarshalEventItem(av map[string]types.AttributeValue) (eventItem, error) {
	var it eventItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return it, fmt.Errorf("decode event: %w", err)
	}
	return it, nil
}

func (it eventItem) event() (container.Event, error) {
	at, err := parseTime(it.At)
	if err != nil {
		return container.Event{}, fmt.Errorf("decode event %s/%d at: %w", it.InstanceID, it.Seq, err)
	}
	ev := container.Event{
		InstanceID: it.InstanceID, Seq: it.Seq, Type: it.Type, From: fsm.Status(it.From),
		To: fsm.Status(it.To), At: at, Message: it.Message, ExitCode: it.ExitCode, Actor: it.Actor,
		OnBehalfOf: it.OnBehalfOf,
	}
	if it.LastWords != "" {
		ev.LastWords = new(container.LastWords)
		if err := json.Unmarshal([]byte(it.LastWords), ev.LastWords); err != nil {
			return container.Event{}, fmt.Errorf("decode event %s/%d last words: %w", it.InstanceID, it.Seq, err)
		}
	}
	return ev, nil
}

// outboxItem is an outbox item as stored. Undispatched is set (to
// undispatchedKey) only while the state is pending, which makes the
// undispatched index sparse; ExpiresAt is set once the item is done.
type outboxItem struct {
	ID              string `dynamodbav:"id"`
	InstanceID      string `dynamodbav:"instance_id"`
	Owner           string `dynamodbav:"owner,omitempty"`
	Op              string `dynamodbav:"op"`
	InstanceVersion int64  `dynamodbav:"instance_version"`
	RequestID       string `dynamodbav:"request_id,omitempty"`
	TraceContext    string `dynamodbav:"trace_context,omitempty"`
	State           string `dynamodbav:"state"`
	Attempts        int    `dynamodbav:"attempts"`
	LastError       string `dynamodbav:"last_error,omitempty"`
	CreatedAt       string `dynamodbav:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at"`
	DispatchedAt    string `dynamodbav:"dispatched_at,omitempty"`
	Undispatched    string `dynamodbav:"undispatched,omitempty"`
	CreatedKey      string `dynamodbav:"created_key"`
	WebhookID       string `dynamodbav:"webhook_id,omitempty"`
	ExpiresAt       int64  `dynamodbav:"expires_at,omitempty"`
	// Delivery is an OpDeliver item's change, as JSON.
	Delivery string `dynamodbav:"delivery,omitempty"`
}

// createdKey is the undispatched index sort key: oldest first, ties broken
// by id.
func createdKey(createdAt time.Time, id string) string { return fmtTime(createdAt) + "#" + id }

func marshalOutbox(o container.OutboxItem) (map[string]types.AttributeValue, error) {
	it := outboxItem{
		ID: o.ID, InstanceID: o.InstanceID, Owner: o.Owner, Op: string(o.Op), InstanceVersion: o.InstanceVersion,
		RequestID: o.RequestID, TraceContext: o.TraceContext, State: string(o.State), Attempts: o.Attempts,
		LastError: o.LastError, CreatedAt: fmtTime(o.CreatedAt), UpdatedAt: fmtTime(o.UpdatedAt),
		DispatchedAt: fmtTimePtr(o.DispatchedAt), CreatedKey: createdKey(o.CreatedAt, o.ID),
	}
	if o.State == container.OutboxPending {
		it.Undispatched = undispatchedKey(o.ID)
	}
	if store.Listed(o) {
		it.WebhookID = o.Delivery.WebhookID
	}
	it.ExpiresAt = ttl(store.OutboxExpiresAt(o))
	if o.Delivery != nil {
		doc, err := json.Marshal(o.Delivery)
		if err != nil {
			return nil, fmt.Errorf("encode outbox item %q delivery: %w", o.ID, err)
		}
		it.Delivery = string(doc)
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode outbox item %q: %w", o.ID, err)
	}
	return av, nil
}

// DecodeOutbox decodes an outbox table item, as GetItem returns it or as a
// stream record's image carries it (the dispatcher), so the item's layout
// is known in this package alone.
func DecodeOutbox(av map[string]types.AttributeValue) (container.OutboxItem, error) {
	return unmarshalOutbox(av)
}

func unmarshalOutbox(av map[string]types.AttributeValue) (container.OutboxItem, error) {
	var it outboxItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return container.OutboxItem{}, fmt.Errorf("decode outbox item: %w", err)
	}
	o := container.OutboxItem{
		ID: it.ID, InstanceID: it.InstanceID, Owner: it.Owner, Op: container.Op(it.Op), InstanceVersion: it.InstanceVersion,
		RequestID: it.RequestID, TraceContext: it.TraceContext, State: container.OutboxState(it.State),
		Attempts: it.Attempts, LastError: it.LastError,
	}
	var err error
	if o.CreatedAt, err = parseTime(it.CreatedAt); err != nil {
		return o, fmt.Errorf("decode outbox item %q created_at: %w", it.ID, err)
	}
	if o.UpdatedAt, err = parseTime(it.UpdatedAt); err != nil {
		return o, fmt.Errorf("decode outbox item %q updated_at: %w", it.ID, err)
	}
	if o.DispatchedAt, err = parseTimePtr(it.DispatchedAt); err != nil {
		return o, fmt.Errorf("decode outbox item %q dispatched_at: %w", it.ID, err)
	}
	if it.Delivery != "" {
		o.Delivery = &container.Delivery{}
		if err := json.Unmarshal([]byte(it.Delivery), o.Delivery); err != nil {
			return o, fmt.Errorf("decode outbox item %q delivery: %w", it.ID, err)
		}
	}
	return o, nil
}

// marshalRestart writes in's restart fields into it.
func marshalRestart(it *instanceItem, in container.Instance) error {
	it.Restarts, it.LastExit, it.RestartAt = in.Restarts, in.LastExit, fmtTimePtr(in.RestartAt)
	if in.Restart == nil {
		return nil
	}
	r, err := json.Marshal(in.Restart)
	if err != nil {
		return fmt.Errorf("encode restart policy of instance %q: %w", in.ID, err)
	}
	it.Restart = string(r)
	return nil
}

// unmarshalRestart reads the restart fields of it into in.
func unmarshalRestart(it instanceItem, in *container.Instance) error {
	in.Restarts, in.LastExit = it.Restarts, it.LastExit
	var err error
	if in.RestartAt, err = parseTimePtr(it.RestartAt); err != nil {
		return fmt.Errorf("decode instance %q restart_at: %w", it.ID, err)
	}
	if it.Restart != "" {
		in.Restart = &container.Restart{}
		if err := json.Unmarshal([]byte(it.Restart), in.Restart); err != nil {
			return fmt.Errorf("decode instance %q restart: %w", it.ID, err)
		}
	}
	return nil
}
