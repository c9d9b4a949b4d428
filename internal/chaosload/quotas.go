package chaosload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// quotaCounts is the part of a standing (GET /api/quotas/me) the checks
// compare: the counted quotas (CPU and memory are not set in the runs).
type quotaCounts struct {
	Instances int64 `json:"instances"`
	Running   int64 `json:"running"`
	Pending   int64 `json:"pending"`
}

// over names each count of used above its limit (0: no limit).
func (used quotaCounts) over(limits quotaCounts) []string {
	var out []string
	for _, q := range []struct {
		name        string
		used, limit int64
	}{{"instances", used.Instances, limits.Instances}, {"running", used.Running, limits.Running}, {"pending", used.Pending, limits.Pending}} {
		if q.limit > 0 && q.used > q.limit {
			out = append(out, fmt.Sprintf("%s %d of %d", q.name, q.used, q.limit))
		}
	}
	return out
}

// QuotaWatch is what WatchQuotas saw: how many standings it read and each
// one seen above a limit.
type QuotaWatch struct {
	Reads int
	Over  []string
}

// WatchQuotas reads every user's standing (GET /api/quotas/me: their use
// and their team's, each one read of the reservation) every period until
// the returned stop is called, which returns what it saw. A use above its
// limit is the quota broken; it must never be seen.
func (r *Run) WatchQuotas(every time.Duration) (stop func() QuotaWatch) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu   sync.Mutex
		seen QuotaWatch
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, u := range r.o.Users {
				reads, over := r.standing(u)
				mu.Lock()
				seen.Reads += reads
				seen.Over = append(seen.Over, over...)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() QuotaWatch {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// standing reads u's standing and names each use above its limit; a read
// a fault left unanswered counts for nothing.
func (r *Run) standing(u User) (reads int, over []string) {
	a, err := r.o.Call(http.MethodGet, "/api/quotas/me", u.Token, nil, "")
	if err != nil || a.Status != http.StatusOK {
		return 0, nil
	}
	var me struct {
		User, Team *struct {
			Name         string
			Limits, Used quotaCounts
		}
	}
	if err := json.Unmarshal(a.Body, &me); err != nil || me.User == nil {
		return 0, []string{fmt.Sprintf("%s's standing is not readable: %s", u.Name, a.Body)}
	}
	for _, s := range []*struct {
		Name         string
		Limits, Used quotaCounts
	}{me.User, me.Team} {
		if s == nil {
			continue
		}
		for _, o := range s.Used.over(s.Limits) {
			over = append(over, fmt.Sprintf("%s (seen by %s at %s): %s", s.Name, u.Name, time.Now().UTC().Format(time.RFC3339Nano), o))
		}
	}
	return 1, over
}

// QuotaReader is the part of a store the quota balance reads.
type QuotaReader interface {
	QuotaUsage(ctx context.Context, sub store.QuotaSubject) (container.QuotaUse, error)
	ListInstances(ctx context.Context, q store.ListQuery) (store.Page[container.Instance], error)
}

// QuotaBalance compares, for every owner and team of the store's
// instances and every user named, the store's reservation with what their
// instances reserve now (container.Reserved of each one's status): once a
// run has settled they must be equal, every reservation of an instance
// that ended or went released, none taken twice. It returns each mismatch
// and the number of subjects compared.
func QuotaBalance(ctx context.Context, st QuotaReader, users []string) (problems []string, subjects int, err error) {
	want := map[store.QuotaSubject]container.QuotaUse{}
	for _, u := range users {
		want[store.QuotaSubject{Kind: store.QuotaUser, Name: u}] = container.QuotaUse{}
	}
	q := store.ListQuery{Limit: 100}
	for {
		page, err := st.ListInstances(ctx, q)
		if err != nil {
			return nil, 0, fmt.Errorf("listing instances: %w", err)
		}
		for _, in := range page.Items {
			if !in.QuotaCounted {
				continue
			}
			r := container.Reserved(in.Status, in.Spec.Resources)
			add(want, store.QuotaSubject{Kind: store.QuotaUser, Name: in.Owner}, r)
			if in.Team != "" {
				add(want, store.QuotaSubject{Kind: store.QuotaTeam, Name: in.Team}, r)
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	subs := make([]store.QuotaSubject, 0, len(want))
	for s := range want {
		subs = append(subs, s)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].String() < subs[j].String() })
	for _, s := range subs {
		got, err := st.QuotaUsage(ctx, s)
		if err != nil {
			return nil, 0, fmt.Errorf("reading the use of %s: %w", s, err)
		}
		if got != want[s] {
			problems = append(problems, fmt.Sprintf("%s: reserved %+v, its instances hold %+v", s, got, want[s]))
		}
	}
	return problems, len(subs), nil
}

func add(m map[store.QuotaSubject]container.QuotaUse, s store.QuotaSubject, u container.QuotaUse) {
	t := m[s]
	t.Instances += u.Instances
	t.Running += u.Running
	t.Pending += u.Pending
	t.CPUMillis += u.CPUMillis
	t.MemoryBytes += u.MemoryBytes
	m[s] = t
}
