package main

import (
	"context"
	"flag"
	"strconv"
	"time"

	"github.com/berth-io/berth/internal/client"
)

// cliUsageCommand is `berth usage`: a group that is one command (name "").
func cliUsageCommands() []cliCommand {
	return []cliCommand{{group: "usage", name: "",
		synopsis: "[--from T] [--to T] [--group-by owner|team|template|day] [--owner U | --team T]",
		summary:  "show usage: container-, CPU- and memory-hours, creates and failures",
		details: `Times are whole UTC hours, RFC 3339 (2026-12-01T00:00:00Z) or a date (2026-12-01: its
midnight UTC); by default the last 30 days to the next whole hour. Hours are running (or paused)
container-hours, the cores and GiB their templates' resources reserve times those hours. Your own
usage; admins may name another --owner or a --team. docs/cost.md turns it into a bill.`,
		run: cliUsage}}
}

// cliTime reads an RFC 3339 time or a date (its midnight UTC).
func cliTime(flagName, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, cliUsagef("--%s: want an RFC 3339 time or a date (2026-12-01), not %q", flagName, s)
}

func cliUsage(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	from := fs.String("from", "", "start, a whole UTC hour (RFC 3339 or a date)")
	to := fs.String("to", "", "end, a whole UTC hour (RFC 3339 or a date)")
	groupBy := fs.String("group-by", "day", "what each row sums: owner, team, template or day")
	owner := fs.String("owner", "", "another `user`'s usage (admins)")
	team := fs.String("team", "", "a `team`'s usage, its members together (admins)")
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	q := client.UsageQuery{GroupBy: *groupBy, Owner: *owner, Team: *team}
	var err error
	if q.From, err = cliTime("from", *from); err != nil {
		return err
	}
	if q.To, err = cliTime("to", *to); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	u, err := c.Usage(ctx, q)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, u)
	}
	hours := func(secs float64) string { return strconv.FormatFloat(secs/3600, 'f', 3, 64) }
	return cliPrintTable(app.stdout, []string{cliUsageKeyHeader(u.GroupBy), "CONTAINER-HOURS", "CPU-HOURS", "MEMORY-GIB-HOURS", "CREATES", "FAILURES"},
		u.Items, func(it client.UsageItem) []string {
			return []string{it.Key, hours(float64(it.RunningSeconds)), hours(it.CPUSeconds), hours(it.MemoryGiBSeconds),
				strconv.FormatInt(it.Creates, 10), strconv.FormatInt(it.Failures, 10)}
		})
}

// cliUsageKeyHeader is the first column's header: what the rows are.
func cliUsageKeyHeader(groupBy string) string {
	if groupBy == "" {
		return "KEY"
	}
	b := []byte(groupBy)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
