package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/container"
)

// DefaultWatchInterval is how often "containers watch" asks for new
// events once it has read them all. Defaults to 1 s: a status change shows
// within about a second, at one small request a second.
const DefaultWatchInterval = time.Second

// watchPage is the page size of the events "containers watch" reads.
const watchPage = 100

func cliWatchCommand() cliCommand {
	return cliCommand{group: "containers", name: "watch", synopsis: "ID [--interval 1s]",
		summary: "follow a container's status changes, one line each, until it is deleted (or Ctrl-C)",
		details: `Prints the changes so far, then each new one as it is written: time, event number, the change
and its event. It reads the container's events (GET /api/containers/{id}/events) again every
--interval, from the last page it read, and ends when the container's deletion is written. -o json
prints each event as one JSON line.`,
		run: cliContainersWatch}
}

func cliContainersWatch(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	interval := fs.Duration("interval", DefaultWatchInterval, "how often to look for new events")
	pos, err := app.parse(fs, args, "ID")
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("--interval must be positive, not %s", *interval)
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	err = watchEvents(ctx, c, pos[0], *interval, func(e client.Event) error {
		if app.jsonOutput() {
			return json.NewEncoder(app.stdout).Encode(e)
		}
		return cliPrintChange(app.stdout, e)
	})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil // Ctrl-C: the user stopped watching
	}
	return err
}

// watchEvents calls show for each status change of the instance (and its
// deletion), oldest first, until the deletion or ctx's end. Event pages
// carry no cursor past their last item, so it re-reads the last page it
// reached (at most watchPage events) and skips what it has shown.
func watchEvents(ctx context.Context, c *client.Client, id string, interval time.Duration, show func(client.Event) error) error {
	cursor, shown := "", int64(0)
	for {
		page, err := c.Events(ctx, id, cursor, watchPage)
		if err != nil {
			return err
		}
		for _, e := range page.Items {
			if e.Seq <= shown {
				continue
			}
			shown = e.Seq
			if e.Type != container.EventDeleted && (e.To == "" || e.From == e.To) {
				continue // not a change of status (a rejected request, a note)
			}
			if err := show(e); err != nil {
				return err
			}
			if e.Type == container.EventDeleted {
				return nil
			}
		}
		if page.NextCursor != "" {
			cursor = page.NextCursor
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// cliPrintChange writes one status change:
// "2026-12-02T09:30:00Z  4  creating -> running  ContainerStarted  running".
func cliPrintChange(w io.Writer, e client.Event) error {
	change := cliCell(string(e.From)) + " -> " + cliCell(string(e.To))
	if e.Type == container.EventDeleted {
		change = "deleted"
	}
	_, err := fmt.Fprintf(w, "%s  %d  %s  %s  %s\n", e.At.UTC().Format(time.RFC3339), e.Seq, change, cliCell(e.Type),
		cliCell(e.Message))
	return err
}
