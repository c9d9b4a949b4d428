package emulate

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
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
	ids := e.stack.FunctionIDs()
	pkgs := make([]Package, len(ids))
	for i, id := range ids {
		if pkgs[i], err = FunctionPackage(ctx, e.root, e.stack.Functions[id]); err != nil {
			return err
		}
	}
	bootstraps, took, err := buildAll(ctx, b, ids, pkgs)
	if err != nil {
		return err
	}
	for i, id := range ids {
		f, pkg := e.stack.Functions[id], pkgs[i]
		conc := functionConcurrency(f, e.o.DefaultConcurrency)
		cfgURL, err := e.dc.endpoint(ctx, id)
		if err != nil {
			return err
		}
		fn := newFunction(id, conc, f.Timeout, rie, bootstraps[i], functionEnv(f, e.env, cfgURL, e.tplOpts.Region), e.log, e.o.FunctionOutput)
		fn.onStart = e.o.OnInstanceStart
		e.fns[id] = fn
		rel, _ := filepath.Rel(e.root, pkg.Dir)
		e.log.Info("function built", "function", id, "package", rel, "tags", pkg.Tags, "timeout", f.Timeout.String(),
			"memory_mb", f.MemoryMB, "concurrency", conc, "build_ms", took[i].Milliseconds())
	}
	return nil
}

// buildAll builds the functions' packages, as many at once as this process
// has CPUs (go build compiles in parallel, but much of a warm build is the
// linker's, which is not): the bootstrap of each and how long it took.
func buildAll(ctx context.Context, b *Builder, ids []string, pkgs []Package) ([]string, []time.Duration, error) {
	bootstraps, took, errs := make([]string, len(ids)), make([]time.Duration, len(ids)), make([]error, len(ids))
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t0 := time.Now()
			bootstraps[i], errs[i] = b.build(ctx, pkgs[i])
			took[i] = time.Since(t0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ids[i], err)
		}
	}
	return bootstraps, took, nil
}
