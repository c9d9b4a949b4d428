// Package dynamostore is the DynamoDB implementation of store.Store, used by
// berth's Lambda functions.
//
// Layout (tables.go): instances (GSIs by_owner and by_status), outbox (stream
// for the dispatcher, sparse GSI of undispatched items), events (per-instance
// history, seq as sort key), templates, idempotency and counters (the create
// admission count). Every write that touches more than one item is one
// TransactWriteItems with condition expressions, so a cancelled transaction
// maps to the store's errors and never leaves half a change behind.
package dynamostore

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/store"
)

// Options configures a Store.
type Options struct {
	// TablePrefix is prepended to every table name (TableName).
	TablePrefix string
	// Clock returns the current time; nil means time.Now. Tests set it to
	// move time past retention windows.
	Clock func() time.Time
	// MaxAttempts bounds how often one operation is tried when it loses a
	// race that is not the caller's conflict (a concurrent transaction on
	// the same items, a concurrent event append). Zero means 20.
	MaxAttempts int
}

// Store is a store.Store on DynamoDB. It is safe for concurrent use.
type Store struct {
	client      *dynamodb.Client
	now         func() time.Time
	maxAttempts int

	instances, outbox, events, templates, idempotency, counters string
}

var _ store.Store = (*Store)(nil)

// New returns a Store on the tables of opts.TablePrefix, which must exist
// (EnsureTables creates them for tests and local setups).
func New(client *dynamodb.Client, opts Options) *Store {
	s := &Store{
		client:      client,
		now:         opts.Clock,
		maxAttempts: opts.MaxAttempts,
		instances:   TableName(opts.TablePrefix, TableInstances),
		outbox:      TableName(opts.TablePrefix, TableOutbox),
		events:      TableName(opts.TablePrefix, TableEvents),
		templates:   TableName(opts.TablePrefix, TableTemplates),
		idempotency: TableName(opts.TablePrefix, TableIdempotency),
		counters:    TableName(opts.TablePrefix, TableCounters),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = 20
	}
	return s
}
