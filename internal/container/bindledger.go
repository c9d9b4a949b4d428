package container

import "time"

// BindLedger is the record of every bind source pattern any template ever
// stored, kept because what a container once wrote on a host (a symlink)
// stays there after its template changed or went. hostpolicy owns its
// rules; the store keeps it as one document, written conditionally on
// Version.
type BindLedger struct {
	// Version counts writes of the ledger; 0 means none is stored yet.
	Version int64       `json:"version"`
	Entries []BindEntry `json:"entries"`
	// UpdatedAt is the store's clock at the last write.
	UpdatedAt time.Time `json:"updated_at"`
}

// BindEntry is one pattern of the ledger.
type BindEntry struct {
	// ID names the entry in the API: a short digest of Pattern.
	ID string `json:"id"`
	// Pattern is the bind source as templates wrote it, with a leading
	// $WORKSPACE_PATH written out as container.workspace_root/$USERID.
	Pattern string `json:"pattern"`
	// Writable is sticky: set once any template mounted the pattern
	// writable, cleared only by a retire.
	Writable bool `json:"writable"`
	// Shared: a template declared the source shared (no owner segment).
	Shared bool `json:"shared,omitempty"`
	// Templates lists the templates that stored the pattern, now or in an
	// earlier version; WritableBy those that mounted it writable.
	Templates  []string `json:"templates"`
	WritableBy []string `json:"writable_by,omitempty"`
}
