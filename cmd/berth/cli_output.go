package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/berth-io/berth/internal/client"
)

// cliStrings is a repeatable string flag; a value may also list several,
// comma-separated (--status running,stopped).
type cliStrings []string

func (s *cliStrings) String() string { return strings.Join(*s, ",") }
func (s *cliStrings) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// cliPairs is a repeatable K=V flag; the value may itself hold '='.
type cliPairs map[string]string

func (p cliPairs) String() string { return "" }
func (p cliPairs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	p[k] = val
	return nil
}

func (p cliPairs) orNil() map[string]string {
	if len(p) == 0 {
		return nil
	}
	return p
}

// writeJSON prints v as indented JSON.
func cliWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cliTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0) }

// cliCell makes a table cell: never empty (tabwriter would shift the
// columns), never a control character.
func cliCell(s string) string {
	if s == "" {
		return "-"
	}
	return cliClean(s)
}

// cliPrintTable writes a table: the header, then one row per item as row
// makes it, every cell through cliCell. The one table writer of the CLI's
// listings.
func cliPrintTable[T any](w io.Writer, header []string, items []T, row func(T) []string) error {
	tw := cliTable(w)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, it := range items {
		cells := row(it)
		for i, c := range cells {
			cells[i] = cliCell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cliPrintInstances(w io.Writer, items []client.Instance, now time.Time) error {
	return cliPrintTable(w, []string{"ID", "NAME", "STATUS", "TEMPLATE", "NODE", "AGE", "EXPIRES"}, items, func(in client.Instance) []string {
		return []string{in.ID, in.Name, string(in.Status), in.Template, in.RuntimeNodeName, cliAge(now.Sub(in.CreatedAt)), cliExpires(in, now)}
	})
}

// cliExpires is the EXPIRES cell: the time left before berth stops or
// deletes the container ("4m"), "expired" once its expires_at has passed,
// or empty for a container without a lifetime.
func cliExpires(in client.Instance, now time.Time) string {
	switch {
	case in.ExpiresAt == nil:
		return ""
	case in.ExpiresAt.After(now):
		return cliAge(in.ExpiresAt.Sub(now))
	default:
		return "expired"
	}
}

// cliPrintRetention writes, below an instance kept under a retention, how
// long it is kept once ended and when berth deletes it:
//
//	RETENTION               DELETE AT
//	stopped 24h, failed 7d  2026-12-06T05:24:18Z (in 23h)
//
// DELETE AT is "-" while the instance is active (or kept: a status its
// retention leaves out), "due" once passed and berth has not deleted it
// yet.
func cliPrintRetention(w io.Writer, in client.Instance, now time.Time) error {
	if in.Retention == nil {
		return nil
	}
	var kept []string
	if in.Retention.Stopped != "" {
		kept = append(kept, "stopped "+in.Retention.Stopped)
	}
	if in.Retention.Failed != "" {
		kept = append(kept, "failed "+in.Retention.Failed)
	}
	deleteAt := cliDue(in.DeleteAt, now)
	tw := cliTable(w)
	fmt.Fprintln(tw, "\nRETENTION\tDELETE AT")
	fmt.Fprintf(tw, "%s\t%s\n", cliCell(strings.Join(kept, ", ")), cliCell(deleteAt))
	return tw.Flush()
}

// cliPrintRestarts writes, below an instance under a restart policy, its
// restarts so far, the exit that brought the latest and when the one
// waiting comes:
//
//	RESTART     RESTARTS  LAST EXIT  NEXT
//	on-failure  1/2       3          2026-12-05T06:10:02Z (in 1s)
func cliPrintRestarts(w io.Writer, in client.Instance, now time.Time) error {
	if in.Restart == nil || in.Restart.Policy == "" || in.Restart.Policy == "never" {
		return nil
	}
	last, next := "", ""
	if in.LastExit != nil {
		last = strconv.Itoa(*in.LastExit)
	}
	next = cliDue(in.RestartAt, now)
	tw := cliTable(w)
	fmt.Fprintln(tw, "\nRESTART\tRESTARTS\tLAST EXIT\tNEXT")
	fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\n", cliCell(in.Restart.Policy), in.Restarts, in.Restart.Limit(), cliCell(last), cliCell(next))
	return tw.Flush()
}

// cliDue writes a time berth acts at, and how soon ("due" once passed);
// "" for none.
func cliDue(at *time.Time, now time.Time) string {
	if at == nil {
		return ""
	}
	left := "due"
	if at.After(now) {
		left = "in " + cliAge(at.Sub(now))
	}
	return at.UTC().Format(time.RFC3339) + " (" + left + ")"
}

func cliPrintEvents(w io.Writer, items []client.Event) error {
	tw := cliTable(w)
	fmt.Fprintln(tw, "SEQ\tTYPE\tFROM\tTO\tAT\tMESSAGE")
	for _, e := range items {
		msg := e.Message
		if e.ExitCode != nil {
			msg = strings.TrimSpace(msg + " (exit code " + strconv.Itoa(*e.ExitCode) + ")")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, cliCell(e.Type), cliCell(string(e.From)), cliCell(string(e.To)),
			e.At.UTC().Format(time.RFC3339), cliCell(msg))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return cliPrintLastWords(w, items)
}

// cliPrintEndpoints writes, below an instance, where its published ports
// answer while it runs: "8080/tcp  127.0.0.1:32768  (host)".
func cliPrintEndpoints(w io.Writer, eps []client.Endpoint) error {
	if len(eps) == 0 {
		return nil
	}
	tw := cliTable(w)
	fmt.Fprintln(tw, "\nPORT\tENDPOINT\tVIA")
	for _, ep := range eps {
		fmt.Fprintf(tw, "%d/%s\t%s\t%s\n", ep.Port, cliCell(ep.Protocol), cliCell(ep.Address()), cliCell(ep.Via))
	}
	return tw.Flush()
}

// cliPrintLastWords writes, below the events table, the last words events
// kept: why a container ended, in its own lines (cleaned of control
// characters, as every cell is).
func cliPrintLastWords(w io.Writer, items []client.Event) error {
	for _, e := range items {
		if e.LastWords == nil {
			continue
		}
		more := ""
		if e.LastWords.Truncated {
			more = "; earlier output left out"
		}
		if _, err := fmt.Fprintf(w, "\nLast words (event %d, %s%s):\n", e.Seq, e.Type, more); err != nil {
			return err
		}
		for _, l := range e.LastWords.Lines {
			stream := l.Stream
			if stream == "" {
				stream = "output"
			}
			if _, err := fmt.Fprintf(w, "  %s | %s\n", stream, cliClean(l.Text)); err != nil {
				return err
			}
		}
	}
	return nil
}

func cliPrintTemplates(w io.Writer, items []client.Template) error {
	return cliPrintTable(w, []string{"NAME", "RUNTIME", "IMAGE", "VERSION", "UPDATED", "DESCRIPTION"}, items, func(t client.Template) []string {
		return []string{t.Name, t.Runtime, t.Image, strconv.FormatInt(t.Version, 10), t.UpdatedAt, t.Description}
	})
}

// cliAge writes a duration the way `kubectl get` does: 45s, 12m, 5h, 3d.
func cliAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}
