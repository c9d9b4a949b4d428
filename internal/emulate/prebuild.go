package emulate

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/berth-io/berth/internal/samtemplate"
)

// Prebuild builds into b, ahead of any Run that shares b, every function of
// the SAM template at path as the stack would be with params (a parameter
// that deploys a function conditionally, such as RuntimeWatcher=true,
// makes its package one of them), and the Runtime Interface Emulator.
//
// A build is work whose length depends on the machine and on what is
// cached: a cold build on a loaded 2-core machine takes minutes. Done once
// here, before a test bounds anything, a stack's start is left with the
// work that does not depend on it; and Run, finding each package built, only
// links what changed since. Builds of different packages run at once, as
// many as this process has CPUs (buildAll). ctx bounds it all.
func (b *Builder) Prebuild(ctx context.Context, path string, params map[string]string) error {
	if _, err := RIEBinary(ctx); err != nil {
		return err
	}
	stack, err := samtemplate.Load(path, samtemplate.Options{Parameters: params})
	if err != nil {
		return fmt.Errorf("prebuild: %w", err)
	}
	root, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return err
	}
	ids := stack.FunctionIDs()
	pkgs := make([]Package, len(ids))
	for i, id := range ids {
		if pkgs[i], err = FunctionPackage(ctx, root, stack.Functions[id]); err != nil {
			return err
		}
	}
	if _, _, err := buildAll(ctx, b, ids, pkgs); err != nil {
		return fmt.Errorf("prebuild: %w", err)
	}
	return nil
}
