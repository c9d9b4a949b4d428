package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/testenv"
)

// testClient connects to DynamoDB Local (skips locally, fails in CI, when
// it is not running).
func testClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return NewLocalClient(testenv.DynamoDBEndpoint(t))
}

// testPrefix is a table prefix no other test uses, so tests run in
// parallel without seeing each other's items.
func testPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "berth_test_" + hex.EncodeToString(b[:]) + "_"
}

// newTables creates a fresh set of tables and deletes them after the test.
func newTables(t testing.TB, client *dynamodb.Client, opts ...EnsureOption) string {
	t.Helper()
	prefix := testPrefix()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := EnsureTables(ctx, client, prefix, opts...); err != nil {
		t.Fatalf("EnsureTables: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := DeleteTables(ctx, client, prefix); err != nil {
			t.Errorf("DeleteTables: %v", err)
		}
	})
	return prefix
}

// clock is a settable test clock. It starts at the real time, because TTL
// (on in these tests) expires items by the real clock: a clock in the past
// would have DynamoDB Local delete items that are live by the store's clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Now().UTC()}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Microsecond) // strictly increasing, like a real clock
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixtureTime is when test instances and their outbox items are made: this
// test run's start (with nanoseconds, to check they survive), since outbox
// items expire store.OutboxMaxAge after their creation by the store's clock,
// which starts at the real time.
var fixtureTime = time.Now().UTC().Truncate(time.Second).Add(5)

// newTestStore returns a Store on fresh tables with a test clock.
func newTestStore(t testing.TB) (*Store, *clock) {
	t.Helper()
	client := testClient(t)
	c := newClock()
	return New(client, Options{TablePrefix: newTables(t, client), Clock: c.Now}), c
}

func testInstance(id, owner string) container.Instance {
	return container.Instance{
		ID: id, Name: "web-" + id, Owner: owner, Template: "nginx", Group: "g1",
		Labels:  map[string]string{"env": "dev", "team": "a"},
		Runtime: container.RuntimeDocker, Image: "nginx:1", Status: fsm.Pending, Version: 1,
		CreatedAt: fixtureTime,
		UpdatedAt: fixtureTime,
		Spec: container.Spec{
			Runtime: container.RuntimeDocker, Image: "nginx:1", Command: []string{"nginx"},
			Env:       map[string]string{"SECRET": "s3cr3t"},
			Ports:     []container.Port{{ContainerPort: 80, Protocol: "tcp"}},
			Resources: container.Resources{CPU: "500m", Memory: "256Mi"},
		},
	}
}

func createParams(in container.Instance, maxPending int) store.CreateParams {
	return store.CreateParams{
		Instance: in,
		Outbox: container.OutboxItem{
			ID: "ob-" + in.ID, InstanceID: in.ID, Op: container.OpCreate, InstanceVersion: in.Version,
			State: container.OutboxPending, CreatedAt: in.CreatedAt, UpdatedAt: in.CreatedAt,
		},
		Event:      container.Event{Type: container.EventCreateRequested, To: fsm.Pending, At: in.CreatedAt},
		MaxPending: maxPending,
	}
}

func mustCreate(t testing.TB, s *Store, in container.Instance) container.Instance {
	t.Helper()
	got, err := s.CreateInstance(context.Background(), createParams(in, 0))
	if err != nil {
		t.Fatalf("CreateInstance(%s): %v", in.ID, err)
	}
	return got
}
