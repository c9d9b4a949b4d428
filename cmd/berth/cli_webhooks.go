package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

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
	pos, err := app.parse(fs, args, "ID")
	if err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	w, err := c.GetWebhook(ctx, pos[0])
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, w)
	}
	return cliPrintWebhooks(app.stdout, []client.Webhook{w})
}

func cliWebhooksDelete(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	pos, err := app.parse(fs, args, "ID")
	if err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	if err := c.DeleteWebhook(ctx, pos[0]); err != nil {
		return err
	}
	if !app.jsonOutput() {
		fmt.Fprintf(app.stdout, "webhook %s deleted\n", cliClean(pos[0]))
	}
	return nil
}

func cliPrintWebhooks(w io.Writer, ws []client.Webhook) error {
	tw := cliTable(w)
	fmt.Fprintln(tw, "ID\tOWNER\tURL\tTEMPLATE\tGROUP\tSTATUSES")
	for _, h := range ws {
		owner := h.Owner
		if h.AllOwners {
			owner += " (all owners)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cliCell(h.ID), cliCell(owner), cliCell(h.URL), cliCell(h.Template),
			cliCell(h.Group), cliCell(strings.Join(h.Statuses, ",")))
	}
	return tw.Flush()
}
