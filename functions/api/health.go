package main

import (
	"context"
	"time"

	"github.com/berth-io/berth/internal/store"
)

// healthTimeout bounds one health check, well inside API Gateway's 30 s.
const healthTimeout = 5 * time.Second

// storeHealth is the api function's health: it is ready while the store
// answers (the function reaches nothing else; the queues are the
// dispatcher's). The report is for admins.
func storeHealth(s store.Store) func(context.Context) (bool, any) {
	return func(ctx context.Context) (bool, any) {
		ctx, cancel := context.WithTimeout(ctx, healthTimeout)
		defer cancel()
		n, err := s.AdmissionCount(ctx)
		if err != nil {
			return false, map[string]any{"ok": false, "status": "not ready", "store": map[string]any{"ok": false, "error": err.Error()}}
		}
		return true, map[string]any{"ok": true, "status": "ready", "store": map[string]any{"ok": true, "unfinished_creates": n}}
	}
}
