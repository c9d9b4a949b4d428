package manager_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// A container's life through the manager, on the bolt store: the API's
// verbs (PutTemplate, CreateByTemplate, Stop) ask, the worker's intents
// (ClaimItem, Stopped) and the state loop (OnEvent) report what the
// runtime did, and each is one conditional store write through the FSM.
func ExampleManager() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := boltstore.Open(filepath.Join(dir, "berth.db"), boltstore.Options{})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	m := manager.New(manager.Options{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	admin, alice := identity.Caller{User: "root", Admin: true}, identity.Caller{User: "alice"}

	// The API's verbs: an admin publishes a template, a user creates from it.
	if _, _, err := m.PutTemplate(ctx, admin, container.Template{Name: "sleeper", Runtime: container.RuntimeDocker,
		Image: "busybox:1", Command: []string{"sleep", "3600"}}); err != nil {
		panic(err)
	}
	res, err := m.CreateByTemplate(ctx, alice, manager.CreateRequest{Template: "sleeper"}, nil, "req-create")
	if err != nil {
		panic(err)
	}
	id := res.Instance.ID
	fmt.Println("created:", res.Instance.Status)

	// The worker's intents and the state loop: it claims the create, the
	// runtime reports the container started.
	inst, err := m.ClaimItem(ctx, id, container.OpCreate, "local", "", time.Time{})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed:", inst.Status)
	applied, err := m.OnEvent(ctx, manager.Observation{InstanceID: id, Kind: manager.ObservedStarted, NodeName: "local"})
	if err != nil {
		panic(err)
	}
	inst, err = m.Get(ctx, alice, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("started:", applied, inst.Status)

	// Stop: the owner asks, a worker claims it and reports the end.
	if _, err := m.Stop(ctx, alice, id, nil, "req-stop"); err != nil {
		panic(err)
	}
	if _, err := m.ClaimItem(ctx, id, container.OpStop, "", "", time.Time{}); err != nil {
		panic(err)
	}
	exit := 0
	if err := m.Stopped(ctx, id, "", time.Now(), &exit, nil, time.Now()); err != nil {
		panic(err)
	}
	inst, err = m.Get(ctx, alice, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("stopped:", inst.Status, *inst.ExitCode)
	// Output:
	// created: pending
	// claimed: creating
	// started: transition running
	// stopped: stopped 0
}
