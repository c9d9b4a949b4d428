package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/berth-io/berth/internal/client"
)

func cliQuotaCommands() []cliCommand {
	return []cliCommand{
		{group: "quotas", name: "me", synopsis: "", summary: "show your limits and use, and your team's", run: cliQuotasMe},
		{group: "quotas", name: "list", synopsis: "", summary: "list the default and every override (admins)", run: cliQuotasList},
		{group: "quotas", name: "get", synopsis: "user|team NAME", summary: "show a user's or a team's override (admins)", run: cliQuotasGet},
		{group: "quotas", name: "put", synopsis: "user|team NAME [--instances N] [--running N] [--pending N] [--cpus C] [--memory M]",
			summary: "set a user's or a team's override (admins); it applies from the next create or start",
			details: `Every limit not given is 0: no limit. --cpus is a number of cores (0.5 is half a core),
--memory an amount of bytes with a suffix (8Gi). A team's limits cover its members together.`,
			run: cliQuotasPut},
		{group: "quotas", name: "delete", synopsis: "user|team NAME", summary: "remove an override (admins): the default applies again", run: cliQuotasDelete},
	}
}

// quotaSubject reads "user|team NAME".
func (app *cliApp) quotaSubject(fs *flag.FlagSet, args []string) (kind, name string, c *client.Client, err error) {
	pos, err := app.parse(fs, args, "user|team", "NAME")
	if err != nil {
		return "", "", nil, err
	}
	if pos[0] != "user" && pos[0] != "team" {
		return "", "", nil, &cliUsageError{msg: fmt.Sprintf("want user or team, not %q", pos[0])}
	}
	c, err = app.client()
	return pos[0], pos[1], c, err
}

func cliQuotasMe(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	m, err := c.MyQuotas(ctx)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, m)
	}
	rows := []quotaRow{{"user " + m.User.Name + " limits", m.User.Limits}, {"user " + m.User.Name + " used", m.User.Used}}
	if t := m.Team; t != nil {
		rows = append(rows, quotaRow{"team " + t.Name + " limits", t.Limits}, quotaRow{"team " + t.Name + " used", t.Used})
	}
	return cliPrintQuotas(app.stdout, "", rows)
}

func cliQuotasList(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	l, err := c.ListQuotas(ctx)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, l)
	}
	rows := []quotaRow{{"default", l.Default}}
	for _, o := range l.Items {
		rows = append(rows, quotaRow{o.Kind + " " + o.Name, o.QuotaFields})
	}
	return cliPrintQuotas(app.stdout, "0: no limit", rows)
}

func cliQuotasGet(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	kind, name, c, err := app.quotaSubject(fs, args)
	if err != nil {
		return err
	}
	o, err := c.GetQuota(ctx, kind, name)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, o)
	}
	return cliPrintQuotas(app.stdout, "0: no limit", []quotaRow{{o.Kind + " " + o.Name, o.QuotaFields}})
}

func cliQuotasPut(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	instances := fs.Int64("instances", 0, "instances not deleted (0: no limit)")
	running := fs.Int64("running", 0, "running instances (0: no limit)")
	pending := fs.Int64("pending", 0, "creates not finished (0: no limit)")
	cpus := fs.String("cpus", "", "`cores` that running instances reserve (0.5, 4)")
	memory := fs.String("memory", "", "`bytes` that running instances reserve (8Gi)")
	kind, name, c, err := app.quotaSubject(fs, args)
	if err != nil {
		return err
	}
	if *cpus != "" {
		if _, err := strconv.ParseFloat(*cpus, 64); err != nil {
			return &cliUsageError{msg: fmt.Sprintf("--cpus: want a number of cores, not %q", *cpus)}
		}
	}
	o, err := c.PutQuota(ctx, kind, name, client.QuotaFields{Instances: *instances, Running: *running, Pending: *pending,
		CPUs: json.Number(*cpus), Memory: *memory})
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, o)
	}
	return cliPrintQuotas(app.stdout, "0: no limit", []quotaRow{{o.Kind + " " + o.Name, o.QuotaFields}})
}

func cliQuotasDelete(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	kind, name, c, err := app.quotaSubject(fs, args)
	if err != nil {
		return err
	}
	if err := c.DeleteQuota(ctx, kind, name); err != nil {
		return err
	}
	if !app.jsonOutput() {
		fmt.Fprintf(app.stdout, "%s %s: override deleted, the default applies\n", kind, cliClean(name))
	}
	return nil
}

// quotaRow is one line of a quota table.
type quotaRow struct {
	what string
	q    client.QuotaFields
}

func cliPrintQuotas(w io.Writer, note string, rows []quotaRow) error {
	if err := cliPrintTable(w, []string{"", "INSTANCES", "RUNNING", "PENDING", "CPUS", "MEMORY"}, rows, func(r quotaRow) []string {
		return []string{r.what, strconv.FormatInt(r.q.Instances, 10), strconv.FormatInt(r.q.Running, 10),
			strconv.FormatInt(r.q.Pending, 10), r.q.CPUs.String(), r.q.Memory}
	}); err != nil {
		return err
	}
	if note != "" {
		_, err := fmt.Fprintln(w, "("+note+")")
		return err
	}
	return nil
}
