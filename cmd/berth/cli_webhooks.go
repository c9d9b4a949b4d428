package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/client"
)

func cliWebhookCommands() []cliCommand {
	return []cliCommand{
		{group: "webhooks", name: "create", synopsis: "URL [--template T] [--group G] [--status S]...",
			summary: "subscribe URL to your containers' status changes (an admin's: everyone's); prints the secret once",
			details: `Deliveries are signed as the Standard Webhooks specification says (webhook-id,
webhook-timestamp, webhook-signature headers; verify them with the printed whsec_ secret). The
server refuses receivers on loopback, link-local, private and shared addresses unless its
webhooks.allowed_networks lists them.`,
			run: cliWebhooksCreate},
		{group: "webhooks", name: "list", synopsis: "", summary: "list your webhook subscriptions", run: cliWebhooksList},
		{group: "webhooks", name: "get", synopsis: "ID", summary: "show a webhook subscription", run: cliWebhooksGet},
		{group: "webhooks", name: "delete", synopsis: "ID", summary: "end a webhook subscription", run: cliWebhooksDelete},
		{group: "webhooks", name: "deliveries", synopsis: "ID [--limit N] [--cursor C] [--all-pages]",
			summary: "list a subscription's deliveries, newest first, with how each went",
			details: `STATUS is pending (not yet taken by the receiver; retried with backoff), delivered, or
failed (given up; send it again with "berth webhooks redeliver"). Deliveries are kept while
pending and for 24 h after they finished.`,
			run: cliWebhooksDeliveries},
		{group: "webhooks", name: "redeliver", synopsis: "ID DELIVERY_ID",
			summary: "send one delivery again, under the same webhook-id",
			details: `A delivered or failed delivery is queued again; one still pending is left as it is,
so running this twice sends once.`,
			run: cliWebhooksRedeliver},
	}
}

func cliWebhooksCreate(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	tpl := fs.String("template", "", "only containers of this `template`")
	group := fs.String("group", "", "only containers of this `group`")
	var statuses cliStrings
	fs.Var(&statuses, "status", "only changes into this `status` (repeatable)")
	pos, err := app.parse(fs, args, "URL")
	if err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	w, err := c.CreateWebhook(ctx, client.WebhookRequest{URL: pos[0], Template: *tpl, Group: *group, Statuses: statuses})
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, w)
	}
	fmt.Fprintf(app.stdout, "webhook %s subscribed: %s\nsecret (shown only now): %s\n", w.ID, cliClean(w.URL), w.Secret)
	return nil
}

func cliWebhooksList(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	ws, err := c.ListWebhooks(ctx)
	if err != nil {
		return err
	}
	if ws == nil {
		ws = []client.Webhook{}
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, client.Page[client.Webhook]{Items: ws})
	}
	return cliPrintWebhooks(app.stdout, ws)
}

func cliWebhooksGet(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	w, err := c.GetWebhook(ctx, id)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, w)
	}
	return cliPrintWebhooks(app.stdout, []client.Webhook{w})
}

func cliWebhooksDelete(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	if err := c.DeleteWebhook(ctx, id); err != nil {
		return err
	}
	if !app.jsonOutput() {
		fmt.Fprintf(app.stdout, "webhook %s deleted\n", cliClean(id))
	}
	return nil
}

func cliPrintWebhooks(w io.Writer, ws []client.Webhook) error {
	return cliPrintTable(w, []string{"ID", "OWNER", "URL", "TEMPLATE", "GROUP", "STATUSES"}, ws, func(h client.Webhook) []string {
		owner := h.Owner
		if h.AllOwners {
			owner += " (all owners)"
		}
		return []string{h.ID, owner, h.URL, h.Template, h.Group, strings.Join(h.Statuses, ",")}
	})
}

// cliWebhooksDeliveries is "webhooks deliveries ID": a subscription's
// deliveries, newest first.
var cliWebhooksDeliveries = cliPagedListing("deliveries", (*client.Client).Deliveries, cliPrintDeliveries)

func cliWebhooksRedeliver(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	pos, err := app.parse(fs, args, "ID", "DELIVERY_ID")
	if err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	d, err := c.Redeliver(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, d)
	}
	fmt.Fprintf(app.stdout, "delivery %s queued again (%s)\n", cliClean(d.ID), cliClean(d.Status))
	return nil
}

func cliPrintDeliveries(w io.Writer, ds []client.Delivery) error {
	return cliPrintTable(w, []string{"ID", "INSTANCE", "SEQ", "CHANGE", "STATUS", "ATTEMPTS", "CREATED", "LAST ERROR"}, ds,
		func(d client.Delivery) []string {
			change := d.From + " -> " + d.To
			if d.Group != "" {
				change = "group " + d.Group + " finished"
			}
			return []string{d.ID, d.InstanceID, strconv.FormatInt(d.Seq, 10), change, d.Status,
				strconv.Itoa(d.Attempts), d.CreatedAt.UTC().Format(time.RFC3339), d.LastError}
		})
}
