package main

import (
	"log/slog"
	"net/http"

	"github.com/berth-io/berth/internal/config"
)

// newHTTPServer is the local API's listener side: every timeout set, so
// that slow or idle clients cannot hold connections (and file descriptors)
// without bound.
func newHTTPServer(c config.Server, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
		// Connection-level errors (TLS noise, timeouts) go to the
		// structured log rather than the process's stderr as free text.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
