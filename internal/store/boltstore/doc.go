// Package boltstore is the store.Store of the local all-in-one server
// (`berth serve`): every instance, event, outbox item, counter, template and
// idempotency record lives in one go.etcd.io/bbolt file.
//
// Why bbolt:
//   - pure Go, no cgo, so the CGO_ENABLED=0 builds the project ships keep working;
//   - one file, so a local installation is one path to back up or delete;
//   - serializable read-write transactions: each store method that must be
//     "all or nothing" is exactly one db.Update, so the conditional writes that
//     DynamoDB expresses as TransactWriteItems with conditions become plain
//     read-check-write code inside a single transaction;
//   - fsync on every commit (bbolt's NoSync stays false unless Options.NoSync
//     asks otherwise for a bulk load): once a method returns, its write
//     survives an abrupt kill of the process or a power cut.
//
// Layout (one top-level bucket each; keys sort bytewise):
//
//	instances         id → instanceRecord (JSON; keeps Spec and EventSeq, which
//	                  container.Instance hides from JSON). ULID ids sort by time.
//	idx_owner         owner 0x00 id → nil        owner listings, oldest first
//	idx_status        status 0x00 id → nil       ListActive reads no terminal instance;
//	                  an admin's listing by status reads only that status
//	idx_owner_status  owner 0x00 status 0x00 id → nil   an owner's listing by status
//	idx_deadline      deadline (fixed-width UTC) 0x00 id → nil   the instances with a
//	                  container.Instance.Deadline, soonest first (ListDeadlines)
//	idx_node_bucket   bucket(2, big endian) id → nil   the active instances by their node's
//	                  fleetshard bucket (store.NodeBucket; ListActiveInBucket)
//	events            id 0x00 seq(8, big endian) → container.Event (JSON)
//	deleted           id → deletionRecord        keeps events readable after a delete
//	outbox            id → container.OutboxItem (JSON)
//	idx_undispatched  created_at(8) id → nil     pending items, oldest first
//	idx_dispatched    id → nil                   dispatched items: RequeueDispatched reads
//	                  only these at start, not every retained outbox item
//	expiry            expires_at(8) kind(1) ref → nil   work list of Purge
//	templates         name → container.Template (JSON)
//	idempotency       owner 0x00 key → store.IdempotencyRecord (JSON)
//	counters          "admission" → int64 (8, big endian)
//	meta              "schema" → format version
//
// Expiry: reads never return what has expired (deleted instances' events after
// store.EventRetention, outbox items at store.OutboxExpiresAt,
// idempotency records after store.IdempotencyRetention), whether or not it was
// physically removed yet. Physical removal is Purge, which the local server
// calls from its ticker; it walks only the expiry bucket up to now.
//
// Writers are serialized by bbolt (one read-write transaction at a time) and
// each commit fsyncs, so write throughput is bounded by the disk's fsync
// latency; readers never block writers.
package boltstore
