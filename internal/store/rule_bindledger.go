package store

import (
	"time"

	"github.com/berth-io/berth/internal/container"
)

// BindLedgerPut replaces the bind ledger with Ledger if the stored one is
// still at Ledger.Version-1 (none stored for 1); else the write fails with
// ErrBindLedgerChanged. PlanLedger makes one.
type BindLedgerPut struct{ Ledger container.BindLedger }

func (BindLedgerPut) isPart() {}

// PlanLedger is the rule of every bind ledger write, alone (PutBindLedger)
// or with a template (PutTemplateWithLedger): the caller's ledger, read at
// l.Version, is stored at l.Version+1 with the store's clock as UpdatedAt.
func PlanLedger(l container.BindLedger, now time.Time) BindLedgerPut {
	l.Version++
	l.UpdatedAt = now.UTC()
	return BindLedgerPut{Ledger: l}
}
