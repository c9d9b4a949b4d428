package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
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

// CreateInstance commits the create store.PlanCreate describes in one
// transaction, which also takes the admission slot on a counter shard.
func (s *Store) CreateInstance(ctx context.Context, p store.CreateParams) (container.Instance, error) {
	const op = "create instance"
	x, err := s.commit(ctx, op, p.Instance.ID, func(context.Context) (*store.Write, map[string]types.AttributeValue, error) {
		w, err := store.PlanCreate(p, s.now())
		if err != nil {
			return nil, nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, p.Instance.ID, err)
		}
		return w, nil, nil
	})
	if err != nil {
		return container.Instance{}, err
	}
	// Return what a read returns (times in UTC, empty values as stored) so
	// callers can compare it with later reads.
	return unmarshalInstance(x.instAV)
}

// Transition commits the change store.PlanTransition describes from the
// instance as read, conditionally on it being still as read.
func (s *Store) Transition(ctx context.Context, p store.TransitionParams) (container.Instance, error) {
	const op = "transition"
	if err := store.CheckTransition(p); err != nil {
		return container.Instance{}, err
	}
	x, err := s.commit(ctx, op, p.ID, func(ctx context.Context) (*store.Write, map[string]types.AttributeValue, error) {
		cur, curAV, err := s.getInstanceItem(ctx, op, p.ID)
		if err != nil {
			return nil, nil, err
		}
		w, err := store.PlanTransition(p, cur, s.now())
		if err != nil {
			return nil, nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, p.ID, err)
		}
		return w, curAV, nil
	})
	if err != nil {
		return container.Instance{}, err
	}
	return unmarshalInstance(x.instAV)
}

// DeleteInstance commits the removal store.PlanDelete describes: the
// instance goes, a deletion marker keeps its history readable for
// store.EventRetention, and the history gets its TTL.
func (s *Store) DeleteInstance(ctx context.Context, p store.DeleteParams) error {
	const op = "delete instance"
	x, err := s.commit(ctx, op, p.ID, func(ctx context.Context) (*store.Write, map[string]types.AttributeValue, error) {
		cur, curAV, err := s.getInstanceItem(ctx, op, p.ID)
		if err != nil {
			return nil, nil, err
		}
		w, err := store.PlanDelete(p, cur, s.now())
		if err != nil {
			return nil, nil, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, p.ID, err)
		}
		return w, curAV, nil
	})
	if err != nil {
		return err
	}
	if x.oldest > 1 {
		// The delete has committed and its history is readable either
		// way; events left unstamped only cost storage.
		_ = s.stampEvents(ctx, p.ID, 1, x.oldest-1, historyExpires(x.w))
	}
	return nil
}

// buildInstance adds the instance item and the event of x's write.
func (s *Store) buildInstance(x *txWrite) error {
	w := x.w
	if w.Kind == store.WriteDelete {
		return s.buildRemoval(x)
	}
	var err error
	if x.instAV, err = marshalInstance(w.Instance); err != nil {
		return err
	}
	cond := notExists(AttrID)
	if w.Kind == store.WriteTransition {
		for _, a := range []string{AttrAdmissionShard, AttrOwnerSlot} {
			if v, ok := x.prior[a]; ok {
				x.instAV[a] = v
			}
		}
		cond = instanceUnchanged(w.Prior, true)
	}
	x.t.put(roleInstance, s.instances, x.instAV, cond)
	if w.Event == nil {
		return nil
	}
	evAV, err := marshalEvent(*w.Event, 0)
	if err != nil {
		return err
	}
	// For a create, a history still retained from a deleted instance with
	// the same id also makes the id taken.
	x.t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))
	return nil
}

// buildRemoval adds the delete of the instance, its last event and the
// deletion marker, both expiring with the history.
func (s *Store) buildRemoval(x *txWrite) error {
	w := x.w
	expires := historyExpires(w)
	x.t.delete(roleInstance, s.instances, instanceKey(w.Prior.ID), instanceUnchanged(w.Prior, false))
	evAV, err := marshalEvent(*w.Event, expires)
	if err != nil {
		return err
	}
	x.t.put(roleEvent, s.events, evAV, notExists(AttrInstanceID))
	x.t.put(roleMarker, s.events, markerItem(w.Prior.ID, w.At, expires), nil)
	return nil
}

// stampNewest stamps the TTL on the newest events of a deleted instance in
// the delete's transaction, as many as it has room for; an instance with a
// longer history gets the rest stamped right after the commit.
func (s *Store) stampNewest(x *txWrite) {
	last := x.w.Prior.EventSeq
	x.oldest = max(last-int64(maxTxnItems-len(x.t.items))+1, 1)
	for seq := last; seq >= x.oldest; seq-- {
		x.t.update(roleStamp, s.events, eventKey(x.w.Prior.ID, seq), stampExpiry(historyExpires(x.w)))
	}
}

// historyExpires is when a deleted instance's history expires.
func historyExpires(w *store.Write) int64 { return ttl(w.At.Add(store.EventRetention)) }

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
