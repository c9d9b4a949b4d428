// Package notify is the room of berth's notifications: it holds no code of
// its own, only this map, and the two ways a notification leaves berth as
// its subpackages (webhook, eventbus). The parts that decide and carry a
// notification stay with the layer they belong to, named here so that the
// whole path can be followed from one place.
//
// A notification's path, from a status change to a receiver:
//
//  1. The rule. A subscription (container.Webhook: an owner's URL, with
//     status, label and group filters; container.Webhook.Matches and
//     MatchesGroup) is made, listed and deleted through the manager
//     (manager/webhooks.go, its receiver URL held to webhook.Guard), served
//     by httpapi/webhooks.go and `berth webhooks`.
//  2. The delivery item. Every status change the manager writes carries a
//     container.OpDeliver outbox item for each subscription it matches, in
//     the change's own transaction (manager/notify.go: the notifying store;
//     a group's finish: manager/group_notify.go), and one addressed to
//     container.EventBusTarget when the deployment has an event bus
//     (manager.Options.EventBus). So no change is reported that did not
//     commit, and none that committed goes unreported.
//  3. The queue. The outbox sends delivery items to the notify queue
//     (outbox.QueueFor: outbox.NotifyQueue), apart from the lifecycle work,
//     so that a slow receiver never holds up a container's stop.
//  4. The attempt. The worker's delivery path (worker/deliver.go) takes the
//     item up and hands it to a Deliverer: webhook.Deliverer signs the
//     payload (the Standard Webhooks shape: webhook.Payload, with the
//     subscription's secret) and POSTs it through the guarded client;
//     eventbus.Deliverer puts it on the EventBridge bus (eventbus.Detail). A
//     failed attempt is re-sent as a fresh delayed message (worker/resend.go)
//     for worker.DefaultDeliveryRetryFor, then the item fails with its
//     reason.
//  5. Who runs the attempt. On AWS the notify function (functions/notify)
//     consumes the notify queue and reaches no runtime; `berth serve` runs
//     its own notify consumers (cmd/berth/serve_notify.go). Both are wired
//     by internal/wiring.
//  6. The record. A subscription's deliveries are listed and sent again
//     through the manager (manager/deliveries.go: ListDeliveries,
//     Redeliver), served by httpapi/deliveries.go.
package notify
