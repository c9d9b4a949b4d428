package emulate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serve opens the front door, puts the templates, says the emulation is
// ready and serves until ctx ends.
func (e *emulation) serve(ctx context.Context) error {
	o, log := &e.o, e.log
	if len(e.stack.Routes) == 0 {
		return errors.New("the template routes no HTTP API event to a function")
	}
	fd := &frontDoor{routes: e.stack.Routes, fns: e.fns, auth: e.cfg.Auth, region: e.tplOpts.Region, apiID: "emulated", log: log}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("EMULATE_ADDR %s: %w", o.Addr, err)
	}
	srv := &http.Server{Handler: fd, ReadHeaderTimeout: 10 * time.Second}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), IntegrationTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if len(e.cfg.Auth.Tokens) == 0 {
		log.Warn("no auth.tokens configured: every request is served as the single local admin user " + LocalUser)
	}
	if o.Templates != "" {
		if err := putTemplates(ctx, fd, o.Templates, log); err != nil {
			return err
		}
	}
	url := "http://" + ln.Addr().String()
	if o.Ready != nil {
		o.Ready(url)
	}
	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case err := <-srvDone:
		return fmt.Errorf("the front door stopped: %w", err)
	}
}
