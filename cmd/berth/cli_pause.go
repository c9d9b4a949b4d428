package main

import (
	"context"
	"flag"

	"github.com/berth-io/berth/internal/client"
)

// cliPauseCommand is `berth containers pause` (pause true) or `resume`.
func cliPauseCommand(pause bool) cliCommand {
	if !pause {
		return cliCommand{group: "containers", name: "resume", synopsis: "ID [--if-match VERSION]",
			summary: "let a paused container carry on where it was (a running one is left as it is)",
			run:     cliPause(false)}
	}
	return cliCommand{group: "containers", name: "pause", synopsis: "ID [--if-match VERSION]",
		summary: "freeze a running container's processes, their memory kept",
		details: `The container stays running until berth has frozen it, then is paused ('berth containers
wait ID --status paused'). Its lifetime keeps counting and it keeps its quota. A paused one is left
as it is; one on Kubernetes, which cannot pause, is refused with a 409 naming the runtime.`,
		run: cliPause(true)}
}

func cliPause(pause bool) func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	return func(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
		ifMatch := fs.String("if-match", "", "act only if the container is at this `version` (its ETag); else 412")
		id, c, err := app.forID(fs, args)
		if err != nil {
			return err
		}
		var in client.Instance
		if pause {
			in, err = c.PauseContainer(ctx, id, *ifMatch)
		} else {
			in, err = c.ResumeContainer(ctx, id, *ifMatch)
		}
		if err != nil {
			return err
		}
		return app.printInstance(in)
	}
}
