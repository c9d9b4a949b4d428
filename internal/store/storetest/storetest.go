// Package storetest is the conformance suite every store.Store backend must
// pass. A backend's test calls Run with a factory that returns a fresh,
// empty store reading time from the given clock.
//
// It also holds the fixtures that tests above the store build their data
// with: NewCreate for a valid create, and (outbox_fixtures.go) committed
// outbox items for the packages that read the outbox.
package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// Factory returns a new, empty store whose notion of "now" is now.
type Factory func(t testing.TB, now func() time.Time) store.Store

// Clock is a settable clock for the stores under test.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at the real time in whole seconds: a backend's
// TTL (DynamoDB's) expires items by the real clock, so a clock in the past
// would see items vanish that are live by its own reading.
func NewClock() *Clock {
	return &Clock{now: time.Now().UTC().Truncate(time.Second)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var idCounter atomic.Int64

// newID returns a unique, time-sortable id so that tests control ordering.
func newID() string { return container.NewID() }

// NewCreate builds valid CreateParams for a pending instance of owner.
func NewCreate(clock *Clock, owner string) store.CreateParams {
	id := newID()
	now := clock.Now()
	n := idCounter.Add(1)
	inst := container.Instance{
		ID:       id,
		Name:     fmt.Sprintf("c-%d", n),
		Owner:    owner,
		Template: "busybox",
		Labels:   map[string]string{"team": "a"},
		Runtime:  container.RuntimeDocker,
		Image:    "busybox:1",
		Status:   fsm.Pending,
		Version:  1,
		Spec: container.Spec{
			Runtime:   container.RuntimeDocker,
			Image:     "busybox:1",
			Command:   []string{"sleep", "60"},
			Env:       map[string]string{"SECRET": "s3cr3t"},
			Volumes:   []container.Volume{{Source: "/srv/berth/x", Target: "/data", Type: container.VolumeBind}},
			Resources: container.Resources{CPU: "0.5", Memory: "64Mi"},
			Labels:    map[string]string{"team": "a"},
		},
		CreatedAt: now,
		UpdatedAt: now,
	}
	return store.CreateParams{
		Instance: inst,
		Outbox: container.OutboxItem{
			ID: newID(), InstanceID: id, Op: container.OpCreate, InstanceVersion: 1,
			RequestID: "req-" + id, State: container.OutboxPending, CreatedAt: now, UpdatedAt: now,
		},
		Event: container.Event{
			InstanceID: id, Type: container.EventCreateRequested, To: fsm.Pending, At: now, Actor: owner,
		},
	}
}

// Run runs the whole conformance suite against the backend.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, c *Clock)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateDuplicateID", testCreateDuplicateID},
		{"CreateQueueFull", testCreateQueueFull},
		{"CreateIdempotency", testCreateIdempotency},
		{"CreateParamsChecked", testCreateParamsChecked},
		{"CreateChecksTemplate", testCreateChecksTemplate},
		{"BindLedger", testBindLedger},
		{"BindLedgerRace", testBindLedgerRace},
		{"Deployment", testDeployment},
		{"DeploymentRace", testDeploymentRace},
		{"TransitionOutboxChecked", testTransitionOutboxChecked},
		{"Transition", testTransition},
		{"TransitionErrors", testTransitionErrors},
		{"TransitionWithOutboxAndCompletion", testTransitionWithOutbox},
		{"AdmissionReleasedOnLeavingCreate", testAdmissionRelease},
		{"RepairAdmission", testRepairAdmission},
		{"AdmissionPerOwner", testAdmissionPerOwner},
		{"AppendEvent", testAppendEvent},
		{"LastWords", testLastWords},
		{"Endpoints", testEndpoints},
		{"DeleteKeepsEventsForRetention", testDelete},
		{"DeleteErrors", testDeleteErrors},
		{"ListFiltersAndOwners", testListFilters},
		{"ListPaginationWithInserts", testListPaginationWithInserts},
		{"ListActiveSkipsTerminal", testListActive},
		{"ListManyInstancesInSmallPages", testListManyInstances},
		{"ListEventsPaginated", testListEventsPaginated},
		{"OutboxBookkeeping", testOutbox},
		{"ListUndispatched", testListUndispatched},
		{"Templates", testTemplates},
		{"TemplateImageStatus", testImageStatus},
		{"Idempotency", testIdempotency},
		{"RacingTransitionsOneWinnerPerVersion", testRacingTransitions},
		{"ConcurrentCreatesRespectMaxPending", testConcurrentCreates},
		{"CreatesAndReleasesInterleavedMax5", testCreatesAndReleasesInterleaved(5)},
		{"CreatesAndReleasesInterleavedMax9", testCreatesAndReleasesInterleaved(9)},
		{"FinishedOutboxExpires", testFinishedOutboxExpires},
		{"EveryOutboxItemExpires", testEveryOutboxItemExpires},
		{"ListLimitsAndBadCursors", testListLimitsAndBadCursors},
		{"CompleteUnknownOutbox", testCompleteUnknownOutbox},
		{"TransitionCarriesDispatch", testTransitionCarriesDispatch},
		{"LifetimeStored", testLifetimeStored},
		{"ExpiryConditional", testExpiryConditional},
		{"RetentionDeleteAt", testRetentionDeleteAt},
		{"RetentionConditional", testRetentionConditional},
		{"ListDeadlines", testListDeadlines},
		{"ListActiveInBucket", testListActiveInBucket},
		{"RestartConditional", testRestartConditional},
		{"DeletedIDNotReused", testDeletedIDNotReused},
		{"Webhooks", testWebhooks},
		{"WebhookLimits", testWebhookLimits},
		{"WebhooksRace", testWebhooksRace},
		{"Leases", testLeases},
		{"LeasesRace", testLeasesRace},
		{"TransitionWritesDeliveries", testTransitionDeliveries},
		{"ListDeliveries", testListDeliveries},
		{"Redeliver", testRedeliver},
		{"DeleteWritesDeliveries", testDeleteDeliveries},
		{"CreateWritesDeliveries", testCreateDeliveries},
		{"GroupFinishDeliveries", testGroupDeliveries},
		{"ConcurrentMarkDone", testConcurrentMarkDone},
		{"QuotaLifecycle", testQuotaLifecycle},
		{"QuotaRefusal", testQuotaRefusal},
		{"QuotaConcurrentCreates", testQuotaConcurrentCreates},
		{"QuotaOverrides", testQuotaOverrides},
		{"UsageLifecycle", testUsageLifecycle},
		{"UsageSeeded", testUsageSeeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock()
			s := newStore(t, clock.Now)
			tc.fn(t, s, clock)
		})
	}
}
