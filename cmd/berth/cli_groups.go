package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/fsm"
)

func cliGroupCommands() []cliCommand {
	return []cliCommand{
		{group: "groups", name: "list", synopsis: "[--owner O] [--limit N] [--cursor C] [--all-pages]",
			summary: "list your groups (the containers created with the same --group) with their members counted by status",
			run:     cliGroupsList},
		{group: "groups", name: "get", synopsis: "GROUP [--owner O]",
			summary: "show a group's counts and members", run: cliGroupsGet},
		{group: "groups", name: "finish", synopsis: "GROUP --outcome succeeded|failed|cancelled [--owner O]",
			summary: "end a group: the server's dag_node_cleanup_on_dag_finished (none|stop|delete) for every member",
			details: `Queued members (not created yet) are cancelled in any case, so none is created later: deleted
under delete, failed otherwise. The other members' stop or delete follows in the background.`,
			run: cliGroupsFinish},
		{group: "groups", name: "reset", synopsis: "GROUP [--owner O]",
			summary: "delete every member of a group, queued ones included, before it is started again",
			details: `Refused (409) when the server's cleanup_dag_node_containers_before_start is false.`,
			run:     cliGroupsReset},
	}
}

func cliOwnerFlag(fs *flag.FlagSet) *string {
	return fs.String("owner", "", "the group of this `user` (admins only)")
}

func cliGroupsList(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	owner := cliOwnerFlag(fs)
	limit := fs.Int("limit", 0, "page size `N`, 1-100 (default: the server's, 50)")
	cursor := fs.String("cursor", "", "continue from this `cursor` (a previous page's next_cursor)")
	allPages := fs.Bool("all-pages", false, "follow the cursors to the last page")
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	var page client.Page[client.GroupSummary]
	if *allPages {
		page.Items, err = c.ListAllGroups(ctx, *owner)
	} else {
		page, err = c.ListGroups(ctx, *owner, *cursor, *limit)
	}
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []client.GroupSummary{}
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, page)
	}
	tw := cliTable(app.stdout)
	fmt.Fprintln(tw, "GROUP\tOWNER\tTOTAL\tSTATUSES")
	for _, g := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", cliCell(g.Group), cliCell(g.Owner), g.Total, cliCell(cliCounts(g.Counts)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(app.stderr, "More groups: run again with --cursor %s (or with --all-pages).\n", page.NextCursor)
	}
	return nil
}

// cliCounts writes counts as "running=2 stopped=1", in status order.
func cliCounts(counts map[fsm.Status]int) string {
	keys := make([]string, 0, len(counts))
	for s := range counts {
		keys = append(keys, string(s))
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Itoa(counts[fsm.Status(k)]))
	}
	return strings.Join(parts, " ")
}

func cliGroupsGet(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	owner := cliOwnerFlag(fs)
	arg, c, err := app.forArg(fs, args, "GROUP")
	if err != nil {
		return err
	}
	g, err := c.GetGroup(ctx, arg, *owner)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, g)
	}
	fmt.Fprintf(app.stdout, "Group %s of %s: %d member(s): %s\n\n", cliClean(g.Group), cliClean(g.Owner), g.Total, cliClean(cliCounts(g.Counts)))
	return cliPrintInstances(app.stdout, g.Members, time.Now())
}

func cliGroupsFinish(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	owner := cliOwnerFlag(fs)
	outcome := fs.String("outcome", "", "how the group ended: `succeeded|failed|cancelled` (required)")
	pos, err := app.parse(fs, args, "GROUP")
	if err != nil {
		return err
	}
	if *outcome == "" {
		return cliUsagef("--outcome is required: succeeded, failed or cancelled")
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	res, err := c.FinishGroup(ctx, pos[0], *owner, *outcome)
	if err != nil {
		return err
	}
	return app.printGroupResult(res)
}

func cliGroupsReset(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	owner := cliOwnerFlag(fs)
	arg, c, err := app.forArg(fs, args, "GROUP")
	if err != nil {
		return err
	}
	res, err := c.ResetGroup(ctx, arg, *owner)
	if err != nil {
		return err
	}
	return app.printGroupResult(res)
}

func (app *cliApp) printGroupResult(res client.GroupResult) error {
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, res)
	}
	fmt.Fprintf(app.stdout, "Group %s of %s: policy %s applied to %d member(s)\n\n", cliClean(res.Group), cliClean(res.Owner),
		cliClean(res.Policy), len(res.Members))
	return cliPrintActions(app.stdout, res)
}

func cliPrintActions(w io.Writer, res client.GroupResult) error {
	tw := cliTable(w)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tACTION")
	for _, m := range res.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cliCell(m.ID), cliCell(m.Name), cliCell(string(m.Status)), cliCell(m.Action))
	}
	return tw.Flush()
}
