// Package eventbus puts berth's status changes on an Amazon EventBridge
// event bus, so that a deployer routes them with rules to anything AWS has.
//
// Every status change is an event with source Source ("berth") and
// detail-type DetailTypeStatusChange ("Container Status Change"), and an
// instance's final removal one with DetailTypeDeleted ("Container
// Deleted"); its detail is a Detail. The manager writes one container.OpDeliver outbox
// item per change, addressed to container.EventBusTarget, in the change's
// own transaction; the worker hands it to a Deliverer, which puts it on the
// bus. The outbox makes the delivery at-least-once: a failed put is
// retried like a webhook delivery, so a rule's target may see an event
// twice and tells the copies apart by the instance id and seq.
package eventbus
