package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

func ledgerOf(version int64, patterns ...string) container.BindLedger {
	l := container.BindLedger{Version: version}
	for _, p := range patterns {
		l.Entries = append(l.Entries, container.BindEntry{ID: p, Pattern: p, Writable: true, Templates: []string{"t"}, WritableBy: []string{"t"}})
	}
	return l
}

// testBindLedger: the ledger starts empty at version 0, is written only at
// the version it replaces (a write at a stale version is
// ErrBindLedgerChanged and writes nothing), is written with a template in
// one transaction (both or neither), and outlives the template's delete.
func testBindLedger(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	l, err := s.GetBindLedger(ctx)
	if err != nil || l.Version != 0 || len(l.Entries) != 0 {
		t.Fatalf("a new store's ledger = %+v, %v; want an empty one at version 0", l, err)
	}
	l1, err := s.PutBindLedger(ctx, ledgerOf(0, "/r/$USERID"))
	if err != nil || l1.Version != 1 {
		t.Fatalf("first put: %+v, %v; want version 1", l1, err)
	}
	_, err = s.PutBindLedger(ctx, ledgerOf(0, "/r/other"))
	wantErr(t, "a second first put", err, store.ErrBindLedgerChanged)

	tpl := container.Template{Name: "homew", Runtime: container.RuntimeDocker, Image: "busybox:1",
		Volumes: []container.Volume{{Type: container.VolumeBind, Source: "/r/h/$USERID", Target: "/home"}}}
	// A stale ledger: neither the template nor the ledger is written.
	_, _, err = s.PutTemplateWithLedger(ctx, tpl, ledgerOf(0, "/r/h/$USERID"))
	wantErr(t, "put template with a stale ledger", err, store.ErrBindLedgerChanged)
	if _, err := s.GetTemplate(ctx, tpl.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the template was written with a refused ledger: %v", err)
	}
	stored, created, err := s.PutTemplateWithLedger(ctx, tpl, ledgerOf(1, "/r/$USERID", "/r/h/$USERID"))
	if err != nil || !created || stored.Version != 1 {
		t.Fatalf("put template with the ledger: %+v, %v, %v", stored, created, err)
	}
	got, err := s.GetTemplate(ctx, tpl.Name)
	if err != nil || got.Version != 1 || len(got.Volumes) != 1 {
		t.Fatalf("stored template = %+v, %v", got, err)
	}
	// A second put of the template moves both versions.
	tpl.Volumes[0].ReadOnly = true
	stored, created, err = s.PutTemplateWithLedger(ctx, tpl, ledgerOf(2, "/r/$USERID", "/r/h/$USERID"))
	if err != nil || created || stored.Version != 2 {
		t.Fatalf("second put: %+v, %v, %v", stored, created, err)
	}
	if err := s.DeleteTemplate(ctx, tpl.Name); err != nil {
		t.Fatal(err)
	}
	l, err = s.GetBindLedger(ctx)
	if err != nil || l.Version != 3 || len(l.Entries) != 2 || l.Entries[1].Pattern != "/r/h/$USERID" || !l.Entries[1].Writable {
		t.Fatalf("ledger after the template's delete = %+v, %v; want version 3 with both entries", l, err)
	}
	if l.UpdatedAt.IsZero() {
		t.Errorf("ledger UpdatedAt not set")
	}
}

// testBindLedgerRace: of writers racing from the same ledger version
// (template writes and plain ledger writes), exactly one wins; every
// loser gets ErrBindLedgerChanged and its template is not written.
func testBindLedgerRace(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	base, err := s.PutBindLedger(ctx, ledgerOf(0, "/r/base"))
	if err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ledgerOf(base.Version, "/r/base", fmt.Sprintf("/r/w%d", i))
			if i%2 == 0 {
				_, errs[i] = s.PutBindLedger(ctx, l)
				return
			}
			tpl := container.Template{Name: fmt.Sprintf("t%d", i), Runtime: container.RuntimeDocker, Image: "busybox:1"}
			_, _, errs[i] = s.PutTemplateWithLedger(ctx, tpl, l)
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrBindLedgerChanged):
			if i%2 == 1 {
				if _, gerr := s.GetTemplate(ctx, fmt.Sprintf("t%d", i)); !errors.Is(gerr, store.ErrNotFound) {
					t.Errorf("writer %d lost the ledger race but its template was written: %v", i, gerr)
				}
			}
		default:
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d writers won the race from version %d, want exactly 1", wins, base.Version)
	}
	l, err := s.GetBindLedger(ctx)
	if err != nil || l.Version != base.Version+1 || len(l.Entries) != 2 {
		t.Errorf("ledger after the race = %+v, %v; want version %d with the winner's 2 entries", l, err, base.Version+1)
	}
}
