package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/berth-io/berth/internal/client"
)

// cliStatsCommand is `berth containers stats`.
func cliStatsCommand() cliCommand {
	return cliCommand{group: "containers", name: "stats",
		synopsis: "ID [--watch] [--every D]",
		summary:  "show what a running container uses now (CPU, memory, network, block I/O, processes)",
		details: `One reading from the container's runtime (on Docker it takes about a second). --watch prints a
reading every --every (default 2s) until Ctrl-C or the container stops running; -o json prints the API's
object (one a line with --watch).`,
		run: cliContainersStats}
}

// DefaultStatsEvery is how often `berth containers stats --watch` reads.
const DefaultStatsEvery = 2 * time.Second

func cliContainersStats(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	watch := fs.Bool("watch", false, "print a reading every --every until Ctrl-C")
	every := fs.Duration("every", DefaultStatsEvery, "with --watch, how often to read (at least 1s)")
	id, c, err := app.forID(fs, args)
	if err != nil {
		return err
	}
	if *every < time.Second {
		return cliUsagef("--every must be at least 1s")
	}
	for {
		s, err := c.ContainerStats(ctx, id)
		if err != nil {
			return err
		}
		if err := app.printStats(s, *watch); err != nil || !*watch {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*every):
		}
	}
}

// printStats prints one reading: a line under a header (the header once,
// before the first), or the API's object on a line of its own.
func (app *cliApp) printStats(s client.Stats, watching bool) error {
	if app.jsonOutput() {
		if watching {
			return json.NewEncoder(app.stdout).Encode(s)
		}
		return cliWriteJSON(app.stdout, s)
	}
	if !app.printedHeader {
		app.printedHeader = true
		fmt.Fprintln(app.stdout, "TIME      CPU (CORES)  CPU % LIMIT  MEMORY        MEM LIMIT     NET RX/TX          BLOCK R/W          PIDS")
	}
	_, err := fmt.Fprintf(app.stdout, "%-9s %-12.3f %-12s %-13s %-13s %-18s %-18s %s\n",
		s.At.Local().Format("15:04:05"), s.CPU.Cores, orDash(s.CPU.PercentOfLimit, func(p float64) string { return fmt.Sprintf("%.1f", p) }),
		bytesIEC(s.Memory.UsageBytes), orDash(s.Memory.LimitBytes, bytesIEC),
		orDash(s.Network, func(n client.NetworkStats) string { return bytesIEC(n.RxBytes) + "/" + bytesIEC(n.TxBytes) }),
		orDash(s.BlockIO, func(b client.BlockIOStats) string { return bytesIEC(b.ReadBytes) + "/" + bytesIEC(b.WriteBytes) }),
		orDash(s.PIDs, func(n uint64) string { return fmt.Sprint(n) }))
	return err
}

// orDash formats *p, or "-" for a reading the runtime did not give.
func orDash[T any](p *T, f func(T) string) string {
	if p == nil {
		return "-"
	}
	return f(*p)
}

// bytesIEC writes n with a binary unit: 64.0MiB.
func bytesIEC(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
