package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/berth-io/berth/internal/store"
)

var _ store.Store = (*Store)(nil)

// ErrLocked is returned by Open when another process (or another Store in
// this one) holds the file: bbolt takes an exclusive flock for writers.
var ErrLocked = errors.New("boltstore: database file is locked by another process")

// DefaultOpenTimeout is how long Open waits for the file lock when
// Options.OpenTimeout is zero. bbolt itself would wait forever, which turns a
// second `berth serve` on the same data file into a silent hang.
const DefaultOpenTimeout = 2 * time.Second

// schemaVersion is written into new files and checked on open, so a future
// layout change cannot silently misread an old file.
const schemaVersion = "1"

// Options tune Open. The zero value is ready to use.
type Options struct {
	// Clock returns the current time; tests pass a fake one. Default time.Now.
	Clock func() time.Time
	// OpenTimeout bounds the wait for the file lock. Zero means
	// DefaultOpenTimeout; a negative value fails at once if the file is
	// locked. bbolt retries the lock every 50ms, so waits round to that.
	OpenTimeout time.Duration
	// NoSync commits without fsync: a crash or power cut may lose recent
	// commits or corrupt the file. It is for bulk loads that can simply be
	// redone (benchmarks filling a store with thousands of instances,
	// which would otherwise wait for one fsync per write); berth serve
	// never sets it.
	NoSync bool
}

// Store is a store.Store on one bbolt file. It is safe for concurrent use.
type Store struct {
	db    *bolt.DB
	clock func() time.Time
}

// Open opens (creating if needed) the store file at path. It fails with an
// error matching ErrLocked if another process keeps the file open past the
// timeout.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.OpenTimeout
	switch {
	case timeout == 0:
		timeout = DefaultOpenTimeout
	case timeout < 0:
		// bbolt treats 0 as "wait forever"; the smallest positive value
		// gives one try plus one retry interval.
		timeout = time.Nanosecond
	}
	_, statErr := os.Stat(path)
	isNew := errors.Is(statErr, fs.ErrNotExist)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: opts.NoSync})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s (waited %s)", ErrLocked, path, timeout)
		}
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if isNew {
		// bbolt fsyncs the file but not the directory entry that names
		// it; without this a power cut could lose a brand-new store whole.
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	// A batch (Store.batch) commits after at most this long: marks that
	// finish together join it, a lone one waits little.
	db.MaxBatchDelay = maxBatchDelay
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Store{db: db, clock: clock}, nil
}

// Close releases the file and its lock. Calls after Close fail with an error
// matching store.ErrUnavailable.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close: %w", err)
	}
	return nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.db.Path() }

func initBuckets(tx *bolt.Tx) error {
	// A file written before idx_dispatched existed has dispatched items
	// the index does not know yet; it is built once, here.
	backfill := tx.Bucket(bucketOutbox) != nil && tx.Bucket(bucketDispatched) == nil
	// The same for idx_owner_status, from the instances.
	backfillOwnerStatus := tx.Bucket(bucketInstances) != nil && tx.Bucket(bucketOwnerStatus) == nil
	// The same for idx_webhook, from the outbox.
	backfillDeliveries := tx.Bucket(bucketOutbox) != nil && tx.Bucket(bucketWebhookIdx) == nil
	// The same for idx_deadline, from the instances.
	backfillDeadlines := tx.Bucket(bucketInstances) != nil && tx.Bucket(bucketDeadlineIdx) == nil
	// The same for idx_node_bucket, from the instances.
	backfillNodeBuckets := tx.Bucket(bucketInstances) != nil && tx.Bucket(bucketNodeBucketIdx) == nil
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	if backfill {
		if err := indexDispatched(tx); err != nil {
			return err
		}
	}
	if backfillOwnerStatus {
		if err := indexOwnerStatus(tx); err != nil {
			return err
		}
	}
	if backfillDeliveries {
		if err := indexDeliveries(tx); err != nil {
			return err
		}
	}
	if backfillDeadlines {
		if err := deadlineIndex.build(tx); err != nil {
			return err
		}
	}
	if backfillNodeBuckets {
		if err := nodeBucketIndex.build(tx); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	switch v := meta.Get(keySchema); {
	case v == nil:
		return meta.Put(keySchema, []byte(schemaVersion))
	case string(v) != schemaVersion:
		return fmt.Errorf("file has schema version %q, this build reads %q", v, schemaVersion)
	}
	return nil
}

// update runs fn in one read-write transaction: it commits (and fsyncs) if
// fn returns nil and rolls everything back otherwise.
func (s *Store) update(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: %s: %w", op, err)
	}
	return wrapErr(op, s.db.Update(fn))
}

// maxBatchDelay is how long a batch waits for more calls before it
// commits (bolt's default is 10 ms, longer than a commit takes).
const maxBatchDelay = 2 * time.Millisecond

// batch runs fn in a read-write transaction that concurrent batch calls
// share (bolt's DB.Batch: one commit, one fsync, for all of them, after at
// most bolt's MaxBatchDelay). fn may run more than once (alone, when
// another function of the batch failed), so it must only act on tx.
func (s *Store) batch(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: %s: %w", op, err)
	}
	return wrapErr(op, s.db.Batch(fn))
}

// view runs fn in a read-only transaction (a consistent snapshot).
func (s *Store) view(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: %s: %w", op, err)
	}
	return wrapErr(op, s.db.View(fn))
}

func wrapErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return fmt.Errorf("boltstore: %s: %w: %w", op, store.ErrUnavailable, err)
	default:
		return fmt.Errorf("boltstore: %s: %w", op, err)
	}
}

func (s *Store) now() time.Time { return s.clock() }

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for syncing there
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
