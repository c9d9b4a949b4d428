package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/berth-io/berth/internal/client"
)

// cliPagedListing is the run of a command that lists one thing's items
// in pages (a container's events, a subscription's deliveries): ID,
// --limit, --cursor and --all-pages; a table made by print, or -o json
// ({items, next_cursor}); without --all-pages, the next page's cursor on
// stderr when there is one.
func cliPagedListing[T any](what string, fetch func(c *client.Client, ctx context.Context, id, cursor string, limit int) (client.Page[T], error),
	print func(io.Writer, []T) error) func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	return func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
		limit := fs.Int("limit", 0, "page size `N`, 1-100 (default: the server's, 50)")
		cursor := fs.String("cursor", "", "continue from this `cursor` (a previous page's next_cursor)")
		allPages := fs.Bool("all-pages", false, "follow the cursors to the last page")
		id, c, err := app.forID(fs, args)
		if err != nil {
			return err
		}
		page, err := cliPages(*cursor, *allPages, func(cursor string) (client.Page[T], error) {
			return fetch(c, ctx, id, cursor, *limit)
		})
		if err != nil {
			return err
		}
		if app.jsonOutput() {
			return cliWriteJSON(app.stdout, page)
		}
		if err := print(app.stdout, page.Items); err != nil {
			return err
		}
		if page.NextCursor != "" {
			fmt.Fprintf(app.stderr, "More %s: run again with --cursor %s (or with --all-pages).\n", what, page.NextCursor)
		}
		return nil
	}
}

// cliPages fetches a listing from cursor: one page, or every page to the
// last when all is set (then NextCursor is empty). A cursor handed out
// twice ends the walk rather than looping.
func cliPages[T any](cursor string, all bool, fetch func(cursor string) (client.Page[T], error)) (client.Page[T], error) {
	page := client.Page[T]{Items: []T{}}
	seen := map[string]bool{}
	for {
		p, err := fetch(cursor)
		if err != nil {
			return page, err
		}
		page.Items, page.NextCursor = append(page.Items, p.Items...), p.NextCursor
		if !all || p.NextCursor == "" || seen[p.NextCursor] {
			break
		}
		seen[p.NextCursor] = true
		cursor = p.NextCursor
	}
	if all {
		page.NextCursor = ""
	}
	return page, nil
}
