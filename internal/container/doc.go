// Package container holds berth's domain types: templates, the resolved
// spec frozen on each instance at create time, instances, their events and
// the outbox items that carry operations to the workers. JSON tags give the
// shapes of the HTTP API (docs/api.md).
package container
