// Package lambdastream is the dispatcher Lambda's adapter: DynamoDB Streams
// records of the outbox table in, outbox items decoded with dynamostore's
// own decoder and handed to an outbox.Dispatcher, partial batch failures
// out. It keeps aws-lambda-go's event types out of internal/outbox, which
// knows stores and queues, not Lambda.
package lambdastream

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Handler is the dispatcher Lambda's handler: a batch of the outbox
// table's DynamoDB Streams records in, the outbox INSERTs dispatched, and
// the records that failed reported as partial batch failures.
//
// Only INSERT records of the outbox table count: MODIFYs (the dispatcher's
// own MarkDispatched, the worker's MarkDone) and REMOVEs (TTL expiry) are
// ignored, and so are records of other tables. The stack's event source
// mapping should filter to INSERTs too (FilterCriteria
// {"eventName": ["INSERT"]}) so that those never cost an invocation.
//
// Failures: a record whose image cannot be decoded (poison) is reported
// alone; the records whose send failed are reported; everything else in the
// batch is dispatched. Lambda then retries from the lowest reported
// sequence number, so records after it are delivered again: a second send of
// an outbox item only makes a duplicate message, which the worker drops (its
// outbox item is done, or its instance moved on). The event source mapping
// must bound the retries (MaximumRetryAttempts, BisectBatchOnFunctionError)
// and name an on-failure destination, so that a poison record ends there
// instead of blocking its shard; an item whose record gave up is still
// pending in the table and the reconciler's Sweep sends it.
type Handler struct {
	Dispatcher *outbox.Dispatcher
	// OutboxTable is the outbox table's full name (prefix + "outbox").
	// Records whose eventSourceARN names another table are ignored. Empty,
	// or a record without an ARN: the image's shape decides.
	OutboxTable string
	// Logger defaults to the Dispatcher's, then slog.Default.
	Logger *slog.Logger
}

func (h *Handler) log() *slog.Logger {
	switch {
	case h.Logger != nil:
		return h.Logger
	case h.Dispatcher.Logger != nil:
		return h.Dispatcher.Logger
	}
	return slog.Default()
}

// Handle processes one batch. It never returns an error: every failure is a
// batch item failure, so that Lambda retries only from the first failed
// record.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var items []container.OutboxItem
	seqs := map[string][]string{} // outbox id → sequence numbers of its records
	ignored := 0
	for _, rec := range ev.Records {
		if !h.relevant(rec) {
			ignored++
			continue
		}
		it, err := DecodeImage(rec.Change.NewImage)
		if err != nil {
			h.log().ErrorContext(ctx, "outbox stream record cannot be decoded; reported as failed",
				"event_id", rec.EventID, "sequence_number", rec.Change.SequenceNumber, "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
			continue
		}
		if _, dup := seqs[it.ID]; !dup {
			items = append(items, it)
		}
		seqs[it.ID] = append(seqs[it.ID], rec.Change.SequenceNumber)
	}
	failed := h.Dispatcher.Dispatch(ctx, items)
	for _, it := range items {
		if failed[it.ID] == nil {
			continue
		}
		for _, seq := range seqs[it.ID] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
	}
	h.log().InfoContext(ctx, "outbox stream batch done", "records", len(ev.Records), "ignored", ignored,
		"dispatched", len(items)-len(failed), "failed", len(resp.BatchItemFailures))
	return resp, nil
}

// relevant reports whether a record is an outbox INSERT.
func (h *Handler) relevant(rec events.DynamoDBEventRecord) bool {
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
		return false
	}
	if h.OutboxTable != "" && rec.EventSourceArn != "" {
		return TableFromARN(rec.EventSourceArn) == h.OutboxTable
	}
	// No table to compare with: an outbox item has these attributes.
	img := rec.Change.NewImage
	for _, a := range []string{"id", "instance_id", "op", "state", "created_key"} {
		if _, ok := img[a]; !ok {
			return false
		}
	}
	return true
}

// TableFromARN returns the table name of a stream ARN
// (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL), or "".
func TableFromARN(arn string) string {
	_, rest, ok := strings.Cut(arn, ":table/")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "/stream/")
	if !ok {
		return ""
	}
	return name
}

// DecodeImage decodes a stream record's image of an outbox item,
// with dynamostore's own decoder.
func DecodeImage(img map[string]events.DynamoDBAttributeValue) (container.OutboxItem, error) {
	if len(img) == 0 {
		return container.OutboxItem{}, fmt.Errorf("outbox stream record: no new image")
	}
	av, err := FromEventAttributes(img)
	if err != nil {
		return container.OutboxItem{}, fmt.Errorf("outbox stream record: %w", err)
	}
	it, err := dynamostore.DecodeOutbox(av)
	if err != nil {
		return it, fmt.Errorf("outbox stream record: %w", err)
	}
	if it.CreatedAt.IsZero() {
		return it, fmt.Errorf("outbox stream record %s: no created_at", it.ID)
	}
	if err := outbox.Validate(it); err != nil {
		return it, err
	}
	switch it.State {
	case container.OutboxPending, container.OutboxDispatched, container.OutboxDone, container.OutboxFailed:
	default:
		return it, fmt.Errorf("outbox stream record %s: unknown state %q", it.ID, it.State)
	}
	return it, nil
}

// FromEventAttributes converts a stream image as aws-lambda-go decodes it
// into the SDK's attribute values (for attributevalue.UnmarshalMap).
func FromEventAttributes(in map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(in))
	for k, v := range in {
		av, err := FromEventAttribute(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

// FromEventAttribute converts one aws-lambda-go attribute value.
func FromEventAttribute(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, 0, len(l))
		for i, e := range l {
			av, err := FromEventAttribute(e)
			if err != nil {
				return nil, fmt.Errorf("list element %d: %w", i, err)
			}
			out = append(out, av)
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := FromEventAttributes(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported attribute type %d", v.DataType())
}
