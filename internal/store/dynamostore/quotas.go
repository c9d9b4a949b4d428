package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// A subject's quota use is the counters item "quota#<kind>#<name>", one
// number attribute per quota; every instance write that reserves or
// releases use updates it in its own transaction (a conditioned ADD), so
// the use is exact without a counting pass. Kept in the counters table,
// which every function that writes instances already updates (the
// admission counter), so the stack needs no new table or permission.
const quotaUsePrefix = "quota#"

// The attributes of a quota use item, in the order of container.Quotas.
var quotaAttrs = []string{"instances", "running", "pending", "cpu_millis", "memory_bytes"}

func quotaUseKey(sub store.QuotaSubject) map[string]types.AttributeValue {
	return docKey(quotaUsePrefix + sub.Kind + "#" + sub.Name)
}

// roleQuota is the role of a subject's use item in a write's transaction.
func roleQuota(sub store.QuotaSubject) string { return "quota-" + sub.Kind }

// quotaReserve is the update of q: ADD each quota's delta, conditioned, for
// each quota the delta grows and the limit bounds, on the use staying at
// or below the limit. An item without the attribute counts as 0, unless
// the delta alone passes the limit.
func quotaReserve(q store.QuotaReserve) *expr {
	e := newExpr()
	var adds, conds []string
	for i, name := range container.Quotas {
		d, l := q.Delta.Of(name), q.Limit.Of(name)
		if d == 0 {
			continue
		}
		attr := e.n(quotaAttrs[i])
		adds = append(adds, attr+" "+e.num(d))
		if d > 0 && l > 0 {
			c := attr + " <= " + e.num(l-d)
			if d <= l {
				c = "(attribute_not_exists(" + attr + ") OR " + c + ")"
			}
			conds = append(conds, c)
		}
	}
	e.update = "ADD " + strings.Join(adds, ", ")
	e.condition = strings.Join(conds, " AND ")
	return e
}

func (s *Store) applyQuota(x *txWrite, q store.QuotaReserve) {
	role := roleQuota(q.Subject)
	x.t.update(role, s.counters, quotaUseKey(q.Subject), quotaReserve(q))
	x.quotas = append(x.quotas, q)
}

// quotaRefused reads the use of each subject whose condition failed and
// returns the refusal; nil when the use has room again (released since):
// the write is then tried again at once.
func (s *Store) quotaRefused(ctx context.Context, op string, x *txWrite, out *outcome) error {
	for _, q := range x.quotas {
		if !out.failed[roleQuota(q.Subject)] {
			continue
		}
		used, err := s.QuotaUsage(ctx, q.Subject)
		if err != nil {
			return err
		}
		if err := store.Refusal(q.Subject, used, q.Delta, q.Limit); err != nil {
			return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.instances, x.w.Instance.ID, err)
		}
	}
	return nil
}

// QuotaUsage returns what sub's instances reserve (zero if none).
func (s *Store) QuotaUsage(ctx context.Context, sub store.QuotaSubject) (container.QuotaUse, error) {
	const op = "quota usage"
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.counters), Key: quotaUseKey(sub), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return container.QuotaUse{}, fail(op, s.counters, sub.String(), err)
	}
	var vals [5]int64
	for i, a := range quotaAttrs {
		if n, ok := out.Item[a].(*types.AttributeValueMemberN); ok {
			v, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				return container.QuotaUse{}, fmt.Errorf("dynamostore: %s %s %q: %s: %w", op, s.counters, sub, a, err)
			}
			vals[i] = v
		}
	}
	return container.QuotaUse{Instances: vals[0], Running: vals[1], Pending: vals[2], CPUMillis: vals[3], MemoryBytes: vals[4]}, nil
}
