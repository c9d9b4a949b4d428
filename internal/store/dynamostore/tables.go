package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table names, without the deployment's prefix. The full name of a table is
// prefix + name (TableName), so one account can hold several deployments.
const (
	TableInstances   = "instances"
	TableOutbox      = "outbox"
	TableEvents      = "events"
	TableTemplates   = "templates"
	TableIdempotency = "idempotency"
	TableCounters    = "counters"
)

// Key attributes of the tables and their indexes.
const (
	// instances: partition key.
	AttrID = "id"
	// instances: by_owner partition key (sort key AttrID).
	AttrOwner = "owner"
	// instances: the status. Not an index key: by_status_key is keyed on
	// AttrStatusKey, the status with the instance's shard.
	AttrStatus = "status"
	// instances: by_status_key partition key (sort key AttrID),
	// "<status>#<shard>" (statusKey).
	AttrStatusKey = "status_key"
	// instances: by_deadline partition and sort key, sparse: only an
	// instance with a deadline (container.Instance.Deadline) carries them,
	// "deadline#<shard>" and its deadline (fixed width, UTC) + "#" + id.
	AttrDeadlineShard = "deadline_shard"
	AttrDeadlineKey   = "deadline_key"
	// instances: by_node_bucket partition key (sort key AttrID), sparse:
	// only an active instance carries it, its node's fleetshard bucket
	// (store.NodeBucket) in decimal.
	AttrNodeBucket = "node_bucket"

	// outbox: partition key is AttrID. The undispatched index is sparse: its
	// partition key attribute exists only while the item is pending, and
	// holds "pending#<shard>" (undispatchedKey).
	AttrUndispatched = "undispatched"
	// outbox: undispatched sort key, created_at (fixed width, UTC) + "#" + id.
	AttrCreatedKey = "created_key"
	// outbox: by_webhook partition key (sort key AttrCreatedKey), the
	// subscription a webhook delivery is for; only those items carry it
	// (store.Listed), so the index holds nothing else.
	AttrWebhookID = "webhook_id"

	// events: partition and sort key.
	AttrInstanceID = "instance_id"
	AttrSeq        = "seq"

	// templates: partition key.
	AttrName = "name"

	// idempotency: partition key, owner and key joined by idempotencyKey.
	AttrPK = "pk"

	// counters: partition key is AttrName; the admission item holds AttrCount.
	AttrCount = "cnt"

	// AttrExpiresAt is the TTL attribute (epoch seconds) of the outbox,
	// events and idempotency tables.
	AttrExpiresAt = "expires_at"
)

// Index names.
const (
	IndexByOwner = "by_owner"
	// IndexByStatus is keyed on AttrStatusKey. It is named for its key
	// because the unsharded by_status (keyed on AttrStatus) it replaces
	// cannot be changed in place: a GSI's key schema is fixed.
	IndexByStatus     = "by_status_key"
	IndexUndispatched = "undispatched"
	// IndexByDeadline lists the instances berth acts on by itself soon
	// (ListDeadlines): their lifetime's expiry or their retention's delete.
	IndexByDeadline = "by_deadline"
	// IndexByWebhook lists a subscription's deliveries (ListDeliveries).
	IndexByWebhook = "by_webhook"
	// IndexByNodeBucket lists the active instances of one node bucket
	// (ListActiveInBucket), so a shard of the reconciler reads its own.
	IndexByNodeBucket = "by_node_bucket"
)

// admissionCounter is the counters item holding the create admission count.
const admissionCounter = "admission"

// TableName returns the full name of a table for a deployment prefix.
func TableName(prefix, table string) string { return prefix + table }

// TableDef is one table: how to create it and which attribute, if any, is
// its TTL attribute (TTL is set by a separate UpdateTimeToLive call).
type TableDef struct {
	// Table is the short name (TableInstances, ...).
	Table string
	// Create is the CreateTable request, with the prefixed name.
	Create dynamodb.CreateTableInput
	// TTLAttribute is the TTL attribute name, or "" for none.
	TTLAttribute string
}

// stringAttrs defines string attributes.
func stringAttrs(names ...string) []types.AttributeDefinition {
	defs := make([]types.AttributeDefinition, 0, len(names))
	for _, n := range names {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS})
	}
	return defs
}

// keySchema is a key schema: pk, and sk unless empty.
func keySchema(pk, sk string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
	if sk != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return ks
}

// indexAll is a global secondary index carrying every attribute.
func indexAll(name, pk, sk string) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(name),
		KeySchema: keySchema(pk, sk),
		// Listings return whole instances and outbox items, so the
		// indexes carry everything rather than paying a GetItem per row.
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}

// Tables returns the definitions of every table for a deployment prefix.
// It is the single source of truth for the layout; the SAM template and the
// CDK stack are checked against it.
func Tables(prefix string) []TableDef {
	table := func(t string, attrs []types.AttributeDefinition, ks []types.KeySchemaElement) dynamodb.CreateTableInput {
		return dynamodb.CreateTableInput{
			TableName:            aws.String(TableName(prefix, t)),
			AttributeDefinitions: attrs,
			KeySchema:            ks,
			BillingMode:          types.BillingModePayPerRequest,
		}
	}

	instances := table(TableInstances, stringAttrs(AttrID, AttrOwner, AttrStatusKey, AttrDeadlineShard, AttrDeadlineKey, AttrNodeBucket), keySchema(AttrID, ""))
	instances.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{
		indexAll(IndexByOwner, AttrOwner, AttrID),
		indexAll(IndexByStatus, AttrStatusKey, AttrID),
		indexAll(IndexByDeadline, AttrDeadlineShard, AttrDeadlineKey),
		indexAll(IndexByNodeBucket, AttrNodeBucket, AttrID),
	}

	outbox := table(TableOutbox, stringAttrs(AttrID, AttrUndispatched, AttrCreatedKey, AttrWebhookID), keySchema(AttrID, ""))
	outbox.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{
		indexAll(IndexUndispatched, AttrUndispatched, AttrCreatedKey),
		indexAll(IndexByWebhook, AttrWebhookID, AttrCreatedKey),
	}
	// The dispatcher consumes INSERTs; the old image lets it tell re-marks apart.
	outbox.StreamSpecification = &types.StreamSpecification{
		StreamEnabled:  aws.Bool(true),
		StreamViewType: types.StreamViewTypeNewAndOldImages,
	}

	events := table(TableEvents, []types.AttributeDefinition{
		{AttributeName: aws.String(AttrInstanceID), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(AttrSeq), AttributeType: types.ScalarAttributeTypeN},
	}, keySchema(AttrInstanceID, AttrSeq))

	return []TableDef{
		{Table: TableInstances, Create: instances},
		{Table: TableOutbox, Create: outbox, TTLAttribute: AttrExpiresAt},
		{Table: TableEvents, Create: events, TTLAttribute: AttrExpiresAt},
		{Table: TableTemplates, Create: table(TableTemplates, stringAttrs(AttrName), keySchema(AttrName, ""))},
		{Table: TableIdempotency, Create: table(TableIdempotency, stringAttrs(AttrPK), keySchema(AttrPK, "")), TTLAttribute: AttrExpiresAt},
		{Table: TableCounters, Create: table(TableCounters, stringAttrs(AttrName), keySchema(AttrName, ""))},
	}
}

// EnsureOption changes what EnsureTables sets up.
type EnsureOption func(*ensureConfig)

type ensureConfig struct{ ttl bool }

// WithoutTTL leaves TTL off. Tests whose store clock is far behind the real
// one need it: DynamoDB (Local too) expires items by the real clock, so an
// item that is live by the test's clock but past its expires_at by the real
// one would vanish mid-test. The store never relies on TTL to hide expired
// items (it checks expiry itself), so nothing else changes.
func WithoutTTL() EnsureOption { return func(c *ensureConfig) { c.ttl = false } }

// EnsureTables creates every missing table for prefix, waits until each is
// active and turns on TTL where the layout has it. Existing tables are left
// as they are. It is for tests and local or dev setups; deployed stacks
// create the tables from their templates.
func EnsureTables(ctx context.Context, client *dynamodb.Client, prefix string, opts ...EnsureOption) error {
	cfg := ensureConfig{ttl: true}
	for _, o := range opts {
		o(&cfg)
	}
	for _, def := range Tables(prefix) {
		name := aws.ToString(def.Create.TableName)
		_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var missing *types.ResourceNotFoundException
		switch {
		case err == nil:
		case errors.As(err, &missing):
			in := def.Create
			_, err := client.CreateTable(ctx, &in)
			var inUse *types.ResourceInUseException
			if err != nil && !errors.As(err, &inUse) { // in use: someone else is creating it
				return fmt.Errorf("dynamostore: create table %s: %w", name, err)
			}
		default:
			return fmt.Errorf("dynamostore: describe table %s: %w", name, err)
		}
		waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 200 * time.Millisecond
			o.MaxDelay = 5 * time.Second
		})
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
			return fmt.Errorf("dynamostore: wait for table %s: %w", name, err)
		}
		if cfg.ttl && def.TTLAttribute != "" {
			if err := ensureTTL(ctx, client, name, def.TTLAttribute); err != nil {
				return err
			}
		}
	}
	return nil
}

func ensureTTL(ctx context.Context, client *dynamodb.Client, table, attr string) error {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("dynamostore: describe TTL of %s: %w", table, err)
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamostore: enable TTL on %s.%s: %w", table, attr, err)
	}
	return nil
}

// DeleteTables deletes every table of prefix that exists; tests call it in
// their cleanup.
func DeleteTables(ctx context.Context, client *dynamodb.Client, prefix string) error {
	var errs []error
	for _, def := range Tables(prefix) {
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: def.Create.TableName})
		var missing *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &missing) {
			errs = append(errs, fmt.Errorf("dynamostore: delete table %s: %w", aws.ToString(def.Create.TableName), err))
		}
	}
	return errors.Join(errs...)
}
