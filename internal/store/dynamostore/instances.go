package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

func instanceKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrID: strAV(id)}
}

// getInstance reads an instance with a strongly consistent read, because
// every caller goes on to write conditionally on what it read.
func (s *Store) getInstance(ctx context.Context, op, id string) (container.Instance, error) {
	in, _, err := s.getInstanceItem(ctx, op, id)
	return in, err
}

// getInstanceItem is getInstance with the item as stored, for writes that
// carry over what only the store keeps on it (the admission shard).
func (s *Store) getInstanceItem(ctx context.Context, op, id string) (container.Instance, map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.instances),
		Key:            instanceKey(id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return container.Instance{}, nil, fail(op, s.instances, id, err)
	}
	if out.Item == nil {
		return container.Instance{}, nil, failWith(store.ErrNotFound, op, s.instances, id)
	}
	in, err := unmarshalInstance(out.Item)
	if err != nil {
		return container.Instance{}, nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, id, err)
	}
	return in, out.Item, nil
}

// GetInstance returns the instance or ErrNotFound.
func (s *Store) GetInstance(ctx context.Context, id string) (container.Instance, error) {
	return s.getInstance(ctx, "get instance", id)
}

// CreateInstance writes the instance, its outbox item, its first event, the
// optional idempotency record and takes an admission slot in one
// transaction, which also checks the template when p.Template is set.
func (s *Store) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	const op = "create instance"
	now := s.now()
	in, ob, ev, err := store.PrepareCreate(p, now)
	if err != nil {
		return container.Instance{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, p.Instance.ID, err)
	}
	instAV, err := marshalInstance(in)
	if err != nil {
		return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
	}
	obAV, err := marshalOutbox(ob)
	if err != nil {
		return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
	}
	evAV, err := marshalEvent(ev, 0)
	if err != nil {
		return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
	}

	// The slot is taken on one shard of the counter (admission.go): first
	// the one the id hashes to, then, if that one is full, those a read
	// finds below their cap. The instance records its shard.
	caps := shardCaps(s.admissionShards, p.MaxPending)
	shard := firstShard(in.ID, len(caps))
	instAV[AttrAdmissionShard] = numAV(int64(shard))
	t := &txn{}
	t.update(roleCounter, s.counters, counterKey(shard), admissionTake(caps[shard]))
	t.put(roleInstance, s.instances, instAV, notExists(AttrID))
	t.put(roleOutbox, s.outbox, obAV, notExists(AttrID))
	for _, d := range p.Deliveries {
		dob, err := store.PrepareOutbox(d, in, now)
		if err != nil {
			return container.Instance{}, fmt.Errorf("dynamostore: %s %q: %w", op, in.ID, err)
		}
		dAV, err := marshalOutbox(dob)
		if err != nil {
			return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		t.put(roleDelivery, s.outbox, dAV, notExists(AttrID))
	}
	// A history still retained from a deleted instance with the same id
	// also makes the id taken.
	t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))
	if p.Idempotency != nil {
		item, cond, err := s.idempotencyPut(*p.Idempotency, now)
		if err != nil {
			return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		t.put(roleIdempotency, s.idempotency, item, cond)
	}
	if p.Template != nil {
		cond, err := templateUnchanged(*p.Template)
		if err != nil {
			return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		t.check(roleTemplate, s.templates, templateKey(p.Template.Name), cond)
	}

	token := newRequestToken()
	var room []int // shards left to try, once shard was found full
	searched, conflicts := false, 0
	for attempt := 1; ; attempt++ {
		out, err := s.run(ctx, t, token.attempt(attempt))
		if err != nil {
			return container.Instance{}, fail(op, s.instances, in.ID, err)
		}
		switch {
		case out == nil:
			// Return what a read returns (times in UTC, empty values as
			// stored) so callers can compare it with later reads.
			return unmarshalInstance(instAV)
		case out.failed[roleIdempotency]:
			return container.Instance{}, failWith(store.ErrDuplicateRequest, op, s.idempotency,
				idempotencyKey(p.Idempotency.Owner, p.Idempotency.Key))
		case out.failed[roleInstance], out.failed[roleEvent]:
			return container.Instance{}, failWith(store.ErrAlreadyExists, op, s.instances, in.ID)
		case out.failed[roleOutbox]:
			return container.Instance{}, failWith(store.ErrAlreadyExists, op, s.outbox, ob.ID)
		case out.failed[roleDelivery]:
			return container.Instance{}, failWith(store.ErrAlreadyExists, op, s.outbox, "delivery")
		case out.failed[roleTemplate]:
			return container.Instance{}, failWith(store.ErrTemplateChanged, op, s.templates, p.Template.Name)
		case out.failed[roleCounter]:
			// Every shard this create tried was full when it tried it, and
			// the caps sum to MaxPending: refusing now never lets more than
			// MaxPending creates in.
			if !searched && len(caps) > 1 {
				searched = true
				if room, err = s.shardsWithRoom(ctx, op, caps, shard); err != nil {
					return container.Instance{}, err
				}
			}
			if len(room) == 0 {
				return container.Instance{}, fmt.Errorf("dynamostore: %s %s %q: %d unfinished creates: %w",
					op, s.instances, in.ID, p.MaxPending, store.ErrQueueFull)
			}
			shard, room = room[0], room[1:]
			instAV[AttrAdmissionShard] = numAV(int64(shard))
			t.items[0].Update.Key = counterKey(shard)
			e := admissionTake(caps[shard])
			t.items[0].Update.ConditionExpression = e.conditionOrNil()
			t.items[0].Update.ExpressionAttributeNames = e.namesOrNil()
			t.items[0].Update.ExpressionAttributeValues = e.valuesOrNil()
		case out.conflict:
			// Every create updates an admission counter shard, so concurrent
			// creates collide here; none of them is the caller's conflict.
			conflicts++
			if conflicts >= s.maxAttempts {
				return container.Instance{}, errContention(op, s.instances, in.ID, attempt, errors.New("transaction conflict"))
			}
			if err := pause(ctx, conflicts, nil); err != nil {
				return container.Instance{}, err
			}
		default:
			return container.Instance{}, out.unexpected(op, s.instances, in.ID)
		}
	}
}

// Transition changes the status (and fields) of an instance conditionally
// on its version and status, with its outbox item, event, admission slot
// release and outbox completion in the same transaction.
func (s *Store) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	const op = "transition"
	if p.To != p.From {
		if err := fsm.Check(p.From, p.To); err != nil {
			return container.Instance{}, err
		}
	}
	token := newRequestToken()
	completeID := p.CompleteOutboxID
	dispatchID := p.DispatchOutboxID
	if dispatchID == completeID {
		dispatchID = "" // one action per item in a transaction; done wins
	}
	var lost error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, lost); err != nil {
				return container.Instance{}, err
			}
		}
		cur, curAV, err := s.getInstanceItem(ctx, op, p.ID)
		if err != nil {
			return container.Instance{}, err
		}
		if cur.Version != p.ExpectVersion || cur.Status != p.From {
			return container.Instance{}, fmt.Errorf("dynamostore: %s %s %q: expected %s@%d, found %s@%d: %w",
				op, s.instances, p.ID, p.From, p.ExpectVersion, cur.Status, cur.Version, store.ErrConflict)
		}
		now := s.now()
		next := cur.Clone()
		next.Status = p.To
		if p.Update != nil {
			p.Update(&next)
		}
		// The store owns these, whatever Update did.
		next.ID, next.Owner, next.Status = cur.ID, cur.Owner, p.To
		next.Version = cur.Version + 1
		next.EventSeq = cur.EventSeq
		next.UpdatedAt = now

		t := &txn{}
		var evAV map[string]types.AttributeValue
		if p.Event != nil {
			next.EventSeq++
			if evAV, err = marshalEvent(store.FillEvent(*p.Event, p.ID, next.EventSeq, now), 0); err != nil {
				return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
			}
		}
		instAV, err := marshalInstance(next)
		if err != nil {
			return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		shard := s.slotShard(curAV)
		if sh, ok := curAV[AttrAdmissionShard]; ok {
			instAV[AttrAdmissionShard] = sh
		}
		t.put(roleInstance, s.instances, instAV, instanceUnchanged(cur, true))
		if evAV != nil {
			t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))
		}
		if p.Outbox != nil {
			// The request is for the instance as this write leaves it.
			ob, err := store.PrepareOutbox(*p.Outbox, next, now)
			if err != nil {
				return container.Instance{}, fmt.Errorf("dynamostore: %s %q: %w", op, p.ID, err)
			}
			obAV, err := marshalOutbox(ob)
			if err != nil {
				return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
			}
			t.put(roleOutbox, s.outbox, obAV, notExists(AttrID))
		}
		for _, d := range p.Deliveries {
			ob, err := store.PrepareOutbox(d, next, now)
			if err != nil {
				return container.Instance{}, fmt.Errorf("dynamostore: %s %q: %w", op, p.ID, err)
			}
			obAV, err := marshalOutbox(ob)
			if err != nil {
				return container.Instance{}, fmt.Errorf("dynamostore: %s: %w", op, err)
			}
			t.put(roleDelivery, s.outbox, obAV, notExists(AttrID))
		}
		if d := slotDelta(p.From, p.To); d != 0 {
			t.update(roleCounter, s.counters, counterKey(shard), admissionAdd(d))
		}
		if completeID != "" {
			t.update(roleComplete, s.outbox, outboxKey(completeID), outboxDone(now))
		}
		if dispatchID != "" {
			t.update(roleDispatch, s.outbox, outboxKey(dispatchID), outboxDispatched(now))
		}

		out, err := s.run(ctx, t, token.attempt(attempt))
		if err != nil {
			return container.Instance{}, fail(op, s.instances, p.ID, err)
		}
		switch {
		case out == nil:
			return unmarshalInstance(instAV)
		case out.failed[roleOutbox]:
			return container.Instance{}, failWith(store.ErrAlreadyExists, op, s.outbox, p.Outbox.ID)
		case out.failed[roleDelivery]:
			return container.Instance{}, failWith(store.ErrAlreadyExists, op, s.outbox, "delivery")
		case out.failed[roleComplete] || out.failed[roleDispatch] || out.failed[roleInstance] || out.failed[roleEvent] || out.conflict:
			if out.failed[roleComplete] {
				// The item to complete is gone (expired or never
				// written): there is nothing left to mark.
				completeID = ""
			}
			if out.failed[roleDispatch] {
				// The item is no longer pending (the dispatcher's own
				// mark came first, or it finished or expired): there is
				// nothing left to mark.
				dispatchID = ""
			}
			// The instance condition failed: the next read tells a real
			// conflict (version or status moved: ErrConflict) from a
			// concurrent event append (only event_seq moved: retry).
			lost = fmt.Errorf("transaction cancelled: %v", out)
		default:
			return container.Instance{}, out.unexpected(op, s.instances, p.ID)
		}
	}
	return container.Instance{}, errContention(op, s.instances, p.ID, s.maxAttempts, lost)
}

// DeleteInstance removes the instance at ExpectVersion, appends its last
// event, leaves a deletion marker so its history stays readable for
// store.EventRetention, sets the TTL of the history, releases a held
// admission slot and completes an outbox item, in one transaction.
func (s *Store) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	const op = "delete instance"
	token := newRequestToken()
	completeID := p.CompleteOutboxID
	var lost error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, lost); err != nil {
				return err
			}
		}
		cur, curAV, err := s.getInstanceItem(ctx, op, p.ID)
		if err != nil {
			return err
		}
		if cur.Version != p.ExpectVersion {
			return fmt.Errorf("dynamostore: %s %s %q: expected version %d, found %d: %w",
				op, s.instances, p.ID, p.ExpectVersion, cur.Version, store.ErrConflict)
		}
		now := s.now()
		expires := ttl(now.Add(store.EventRetention))

		t := &txn{}
		t.delete(roleInstance, s.instances, instanceKey(p.ID), instanceUnchanged(cur, false))
		last := store.FillEvent(p.Event, p.ID, cur.EventSeq+1, now)
		evAV, err := marshalEvent(last, expires)
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", op, err)
		}
		t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))
		t.put(roleMarker, s.events, markerItem(p.ID, now, expires), nil)
		for _, d := range p.Deliveries {
			ob, err := store.PrepareRemoval(d, cur, last.Seq, now)
			if err != nil {
				return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.outbox, d.ID, err)
			}
			obAV, err := marshalOutbox(ob)
			if err != nil {
				return fmt.Errorf("dynamostore: %s: %w", op, err)
			}
			t.put(roleDelivery, s.outbox, obAV, notExists(AttrID))
		}
		if cur.Status.HoldsCreateSlot() {
			t.update(roleCounter, s.counters, counterKey(s.slotShard(curAV)), admissionAdd(-1))
		}
		if completeID != "" {
			t.update(roleComplete, s.outbox, outboxKey(completeID), outboxDone(now))
		}
		// Stamp the newest events in the same transaction; an instance
		// with a history longer than a transaction holds gets the rest
		// stamped right after the commit.
		oldest := max(cur.EventSeq-int64(maxTxnItems-len(t.items))+1, 1)
		for seq := cur.EventSeq; seq >= oldest; seq-- {
			t.update(roleStamp, s.events, eventKey(p.ID, seq), stampExpiry(expires))
		}

		out, err := s.run(ctx, t, token.attempt(attempt))
		if err != nil {
			return fail(op, s.instances, p.ID, err)
		}
		switch {
		case out == nil:
			if oldest > 1 {
				// The delete has committed and its history is readable
				// either way; events left unstamped only cost storage.
				_ = s.stampEvents(ctx, p.ID, 1, oldest-1, expires)
			}
			return nil
		case out.failed[roleDelivery]:
			return failWith(store.ErrAlreadyExists, op, s.outbox, p.ID)
		case out.failed[roleComplete] || out.failed[roleInstance] || out.failed[roleEvent] || out.conflict:
			if out.failed[roleComplete] {
				completeID = ""
			}
			lost = fmt.Errorf("transaction cancelled: %v", out)
		default:
			return out.unexpected(op, s.instances, p.ID)
		}
	}
	return errContention(op, s.instances, p.ID, s.maxAttempts, lost)
}

// instanceUnchanged conditions a write on the instance still being exactly
// as read: version, status and event_seq (the last moves on a concurrent
// AppendEvent without a version bump).
func instanceUnchanged(cur container.Instance, withStatus bool) *expr {
	e := newExpr()
	clauses := []string{
		e.n("version") + " = " + e.num(cur.Version),
		e.n("event_seq") + " = " + e.num(cur.EventSeq),
	}
	if withStatus {
		clauses = append(clauses, e.n(AttrStatus)+" = "+e.s(string(cur.Status)))
	}
	e.condition = and(clauses...)
	return e
}

// notExists conditions a put on the item not existing yet.
func notExists(keyAttr string) *expr {
	e := newExpr()
	e.condition = "attribute_not_exists(" + e.n(keyAttr) + ")"
	return e
}

func (o *outcome) String() string {
	return fmt.Sprintf("failed=%v conflict=%v other=%q", o.failed, o.conflict, o.other)
}
