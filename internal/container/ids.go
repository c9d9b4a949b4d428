package container

import "github.com/oklog/ulid/v2"

// NewID returns a new ULID string: unique, opaque to users, and sortable by
// creation time. ulid.Make draws from a process-wide monotonic source, so ids
// made within the same millisecond still sort in the order they were made,
// which keeps owner listings in creation order.
func NewID() string { return ulid.Make().String() }
