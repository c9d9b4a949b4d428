package worker

import (
	"context"
	"log/slog"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/manager"
)

// The worker holds the runtimes, so it reads a container's last words
// itself and hands them to the manager's intents (the manager holds no
// runtime): read for the ends it records (Stopped, Deleted), as a reader
// for those the manager decides on (manager.Observation.LastWords,
// manager.Failure.LastWords).

// lastWordsReader reads last words from the worker's runtimes; nil when it
// has none.
func (w *Worker) lastWordsReader() manager.LastWordsReader {
	if w.rt == nil {
		return nil
	}
	return w.rt.LastWords
}

// lastWords reads inst's last words for an end the worker records; nil
// when it printed nothing, or the read failed: the end is recorded either
// way. The lines are the owner's data and are never logged; a failure is
// logged by its error, which by the runtime.LogReader contract holds none.
func (w *Worker) lastWords(ctx context.Context, log *slog.Logger, inst container.Instance) *container.LastWords {
	read := w.lastWordsReader()
	if read == nil {
		return nil
	}
	words, err := read(ctx, inst)
	if err != nil {
		log.WarnContext(ctx, "last words not read; the end is recorded without them", "error", err)
		return nil
	}
	return words
}
