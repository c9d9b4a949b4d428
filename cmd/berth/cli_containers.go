package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/berth-io/berth/internal/client"
)

// cliCommands lists every subcommand, in the order help shows them.
var cliCommands = slices.Concat(cliContainerCommands(), cliGroupCommands(), cliTemplateCommands(), cliWebhookCommands(), cliQuotaCommands(), cliUsageCommands())

func cliContainerCommands() []cliCommand {
	return []cliCommand{
		{group: "containers", name: "create",
			synopsis: "--template T [--name N] [--env K=V]... [--label K=V]... [--group G] [--lifetime 10m] [--wait STATUS] [--timeout 60s]",
			summary:  "create a container from a template",
			details: `The API answers at once with the container pending; --wait then waits until it has the
given status (usually running). A create is sent with an Idempotency-Key (a random one unless
--idempotency-key is given), so that retrying it after a 429 or 503 never makes a second container.`,
			run: cliContainersCreate},
		{group: "containers", name: "get", synopsis: "ID", summary: "show a container",
			details: `Below the table: the retention the container was created under and, once it has stopped or
failed, when berth deletes it (DELETE AT; "due" once passed); where its ports answer while it runs.`,
			run: cliContainersGet},
		{group: "containers", name: "list",
			synopsis: "[--status S]... [--template T] [--group G] [--label K=V]... [--owner O] [--limit N] [--cursor C] [--all-pages]",
			summary:  "list your containers (an admin's: everyone's), oldest first",
			details: `Without --all-pages one page is shown; when there are more, the table is followed (on stderr)
by the cursor of the next page, and -o json shows the API's {items, next_cursor}.`,
			run: cliContainersList},
		{group: "containers", name: "start", synopsis: "ID [--if-match VERSION]",
			summary: "start a stopped container (or restart a running one)", run: cliLifecycle("start")},
		{group: "containers", name: "stop", synopsis: "ID [--if-match VERSION]",
			summary: "stop a container (a stopped or failed one is left as it is)", run: cliLifecycle("stop")},
		{group: "containers", name: "delete", synopsis: "ID [--if-match VERSION]",
			summary: "delete a container (its events stay readable for 7 days)", run: cliLifecycle("delete")},
		cliPauseCommand(true),
		cliPauseCommand(false),
		{group: "containers", name: "extend", synopsis: "ID --by 10m",
			summary: "extend a container's lifetime (never past its template's max)",
			details: `Moves the container's expires_at later by --by, counted from its current expires_at. An
extension past the lifetime's max (counted from the create) is refused with a 422 naming the limit.`,
			run: cliContainersExtend},
		{group: "containers", name: "events", synopsis: "ID [--limit N] [--cursor C] [--all-pages]",
			summary: "show a container's history, oldest first", run: cliContainersEvents},
		cliLogsCommand(),
		cliStatsCommand(),
		cliExecCommand(),
		cliWatchCommand(),
		{group: "containers", name: "wait", synopsis: "ID [--status running] [--timeout 60s]",
			summary: "wait until a container has a status",
			details: `Exits 1 with "timeout" when the timeout passes first, and with the current status when the
container reached a terminal status (stopped, failed) from which the asked one cannot follow.`,
			run: cliContainersWait},
	}
}

func (app *cliApp) printInstance(in client.Instance) error {
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, in)
	}
	now := time.Now()
	if err := cliPrintInstances(app.stdout, []client.Instance{in}, now); err != nil {
		return err
	}
	if err := cliPrintRetention(app.stdout, in, now); err != nil {
		return err
	}
	if err := cliPrintRestarts(app.stdout, in, now); err != nil {
		return err
	}
	return cliPrintEndpoints(app.stdout, in.Endpoints)
}

func cliContainersCreate(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	var req client.CreateRequest
	env, labels := cliPairs{}, cliPairs{}
	fs.StringVar(&req.Template, "template", "", "`name` of the template (required)")
	fs.StringVar(&req.Name, "name", "", "container `name`")
	fs.Var(env, "env", "environment variable `K=V`, one the template lets users set (repeatable)")
	fs.Var(labels, "label", "label `K=V` (repeatable)")
	fs.StringVar(&req.Group, "group", "", "`group` of the container (a DAG run, a session)")
	fs.StringVar(&req.Lifetime, "lifetime", "", "how long it lives before berth stops it (`duration`, at most the template's max; default: the template's)")
	waitFor := fs.String("wait", "", "then wait until the container has this `status` (e.g. running)")
	timeout := fs.Duration("timeout", 60*time.Second, "how long --wait waits")
	key := fs.String("idempotency-key", "", "`key` that makes a repeated create return the first container (default: a random one)")
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	if req.Template == "" {
		return cliUsagef("--template is required")
	}
	if *waitFor != "" && *timeout <= 0 {
		return cliUsagef("--timeout must be positive")
	}
	req.Env, req.Labels = env.orNil(), labels.orNil()
	c, err := app.client()
	if err != nil {
		return err
	}
	in, err := c.CreateContainer(ctx, req, *key)
	if err != nil {
		return err
	}
	if *waitFor == "" {
		return app.printInstance(in)
	}
	done, err := c.Wait(ctx, in.ID, *waitFor, *timeout)
	if err != nil {
		// Show what was made, so that its id is not lost, then why the wait failed.
		if perr := app.printInstance(in); perr != nil {
			return perr
		}
		return app.waitFailed(ctx, c, in.ID, *waitFor, *timeout, err)
	}
	return app.printInstance(done)
}

// waitFailed reports a failed wait; a timeout names the status the
// container is still in.
func (app *cliApp) waitFailed(ctx context.Context, c *client.Client, id, status string, timeout time.Duration, err error) error {
	if !client.IsTimeout(err) {
		return err
	}
	msg := fmt.Sprintf("berth: timeout: container %s did not become %s within %s", cliClean(id), cliClean(status), timeout)
	if in, gerr := c.GetContainer(ctx, id); gerr == nil {
		msg += fmt.Sprintf("; it is %s", cliClean(string(in.Status)))
	}
	fmt.Fprintln(app.stderr, msg)
	return &cliReported{code: cliExitError}
}

func cliContainersGet(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	in, err := c.GetContainer(ctx, id)
	if err != nil {
		return err
	}
	return app.printInstance(in)
}

func cliContainersList(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	var (
		opts   client.ListOptions
		status cliStrings
		labels = cliPairs{}
	)
	fs.Var(&status, "status", "only containers with this `status` (repeatable, or comma-separated)")
	fs.StringVar(&opts.Template, "template", "", "only containers of this `template`")
	fs.StringVar(&opts.Group, "group", "", "only containers of this `group`")
	fs.Var(labels, "label", "only containers with label `K=V` (repeatable: all must match)")
	fs.StringVar(&opts.Owner, "owner", "", "only the containers of this `user` (admins only)")
	fs.IntVar(&opts.Limit, "limit", 0, "page size `N`, 1-100 (default: the server's, 50)")
	fs.StringVar(&opts.Cursor, "cursor", "", "continue from this `cursor` (a previous page's next_cursor)")
	allPages := fs.Bool("all-pages", false, "follow the cursors to the last page")
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	opts.Status, opts.Labels = status, labels.orNil()
	c, err := app.client()
	if err != nil {
		return err
	}
	var page client.Page[client.Instance]
	if *allPages {
		page.Items, err = c.ListAllContainers(ctx, opts)
	} else {
		page, err = c.ListContainers(ctx, opts)
	}
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []client.Instance{}
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, page)
	}
	if err := cliPrintInstances(app.stdout, page.Items, time.Now()); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(app.stderr, "More containers: run again with --cursor %s (or with --all-pages).\n", page.NextCursor)
	}
	return nil
}

func cliLifecycle(op string) func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	return func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
		ifMatch := fs.String("if-match", "", "act only if the container is at this `version` (its ETag); else 412")
		id, c, err := app.forID(fs, args)
		if err != nil {
			return err
		}
		var in client.Instance
		switch op {
		case "start":
			in, err = c.StartContainer(ctx, id, *ifMatch)
		case "stop":
			in, err = c.StopContainer(ctx, id, *ifMatch)
		case "delete":
			in, err = c.DeleteContainer(ctx, id, *ifMatch)
		default:
			err = errors.New("unknown operation " + op)
		}
		if err != nil {
			return err
		}
		return app.printInstance(in)
	}
}

// cliContainersExtend is "containers extend ID --by D".
func cliContainersExtend(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	by := fs.String("by", "", "how much longer the container lives (`duration`: 10m, 1h; required)")
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	if *by == "" {
		return cliUsagef("--by is required")
	}
	in, err := c.ExtendContainer(ctx, id, *by)
	if err != nil {
		return err
	}
	return app.printInstance(in)
}

// cliContainersEvents is "containers events ID": a container's history.
var cliContainersEvents = cliPagedListing("events", (*client.Client).Events, cliPrintEvents)

func cliContainersWait(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	status := fs.String("status", "running", "the `status` to wait for")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait (the server waits at most 25s per request; longer waits take several)")
	pos, err := app.parse(fs, args, "ID")
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return cliUsagef("--timeout must be positive")
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	in, err := c.Wait(ctx, pos[0], *status, *timeout)
	if err != nil {
		return app.waitFailed(ctx, c, pos[0], *status, *timeout, err)
	}
	return app.printInstance(in)
}
