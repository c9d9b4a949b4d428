// Package dynamostore is the DynamoDB implementation of store.Store, used by
// berth's Lambda functions.
//
// Layout (tables.go): instances (GSIs by_owner, by_status_key and the sparse
// by_deadline and by_node_bucket), outbox (stream
// for the dispatcher, sparse GSIs of undispatched items and of each webhook
// subscription's deliveries), events (per-instance
// history, seq as sort key), templates, idempotency and counters (the create
// admission count). Every write that touches more than one item is one
// TransactWriteItems with condition expressions, so a cancelled transaction
// maps to the store's errors and never leaves half a change behind.
//
// Items:
//
//	instances    id | owner, status_key ("<status>#<index shard>") (GSI keys), status, version, event_seq, spec (JSON), the other fields, admission_shard, team, quota_counted, deadline_shard and deadline_key ("deadline#<index shard>", "<deadline>#<id>": sparse GSI keys while container.Instance.Deadline is set), node_bucket (the by_node_bucket key: the node's fleetshard bucket, only while active)
//	outbox       id | state, undispatched ("pending#<index shard>" while pending: sparse GSI key), created_key, webhook_id (a subscription's delivery: by_webhook GSI key), expires_at (store.OutboxExpiresAt)
//	events       instance_id, seq | the event; seq 0 is a deleted instance's marker (deleted_at); expires_at after a delete
//	templates    name | version, doc (JSON)
//	idempotency  pk = len(owner):owner:key | the record, expires_at
//	counters     name = "admission", "admission#1" … (one item per admission shard) | cnt
//	             name = "quota#<user|team>#<name>" (a subject's quota use) | instances, running, pending, cpu_millis, memory_bytes
//	             name = "quota-overrides" | version, doc (JSON: store.QuotaOverrideSet)
//
// Events are numbered by the instance's event_seq: every write that appends
// one conditions on event_seq and moves it on, so seqs have no gaps. Races
// that are not the caller's conflict (a concurrent append, a transaction
// conflict) are retried inside the store, up to Options.MaxAttempts.
//
// The status and undispatched index keys carry a shard (shards.go,
// IndexShards) so that no index partition takes every write of a status;
// listings read the shards of a key and keep their order and cursors.
//
// Expiry is decided by the store's clock against stored times, never by the
// presence of an item: TTL removes expired items only eventually.
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
	// AdmissionShards is how many counter items the create admission count
	// is spread over, so that concurrent creates do not all write one item.
	// Defaults to DefaultAdmissionShards; at most 100 (one transaction
	// repairs them all). Lowering it on a live deployment is safe: releases
	// of slots taken on the shards it drops go to the last shard, and the
	// next RepairAdmission puts that shard right.
	AdmissionShards int
}

// Store is a store.Store on DynamoDB. It is safe for concurrent use.
type Store struct {
	client      *dynamodb.Client
	now         func() time.Time
	maxAttempts int
	// admissionShards is Options.AdmissionShards, defaulted and bounded.
	admissionShards int

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
		// One repair transaction writes every shard.
		admissionShards: min(opts.AdmissionShards, maxTxnItems),
		instances:       TableName(opts.TablePrefix, TableInstances),
		outbox:          TableName(opts.TablePrefix, TableOutbox),
		events:          TableName(opts.TablePrefix, TableEvents),
		templates:       TableName(opts.TablePrefix, TableTemplates),
		idempotency:     TableName(opts.TablePrefix, TableIdempotency),
		counters:        TableName(opts.TablePrefix, TableCounters),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = 20
	}
	if s.admissionShards <= 0 {
		s.admissionShards = DefaultAdmissionShards
	}
	return s
}
