package emulate

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// startFunctions builds every function and readies it to run under the
// Runtime Interface Emulator.
func (e *emulation) startFunctions(ctx context.Context) error {
	rie, err := RIEBinary(ctx)
	if err != nil {
		return err
	}
	b := e.o.Builder
	if b == nil {
		b = NewBuilder(filepath.Join(e.o.StateDir, "functions"))
	}
	e.fns = map[string]*Function{}
	e.undo = append(e.undo, func() {
		var wg sync.WaitGroup
		for _, f := range e.fns {
			wg.Go(f.Stop)
		}
		wg.Wait()
	})
	for _, id := range e.stack.FunctionIDs() {
		f := e.stack.Functions[id]
		pkg, err := FunctionPackage(ctx, e.root, f)
		if err != nil {
			return err
		}
		t0 := time.Now()
		bootstrap, err := b.build(ctx, pkg)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		conc := functionConcurrency(f, e.o.DefaultConcurrency)
		cfgURL, err := e.dc.endpoint(ctx, id)
		if err != nil {
			return err
		}
		fn := newFunction(id, conc, f.Timeout, rie, bootstrap, functionEnv(f, e.env, cfgURL, e.tplOpts.Region), e.log, e.o.FunctionOutput)
		fn.onStart = e.o.OnInstanceStart
		e.fns[id] = fn
		rel, _ := filepath.Rel(e.root, pkg.Dir)
		e.log.Info("function built", "function", id, "package", rel, "tags", pkg.Tags, "timeout", f.Timeout.String(),
			"memory_mb", f.MemoryMB, "concurrency", conc, "build_ms", time.Since(t0).Milliseconds())
	}
	return nil
}
