package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/berth-io/berth/internal/client"
	"github.com/berth-io/berth/internal/httpapi"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store/boltstore"
)

// serveExample starts the real API (httpapi's handler around a manager on
// an embedded bbolt store in a temporary directory) with token auth for an
// admin, "root", and two users, "alice" and "bob". No runtime or worker
// runs: a create is accepted and stays pending, which is all the examples
// need. stop closes the server and removes the store. The examples panic
// on an unexpected error, rather than log.Fatal, so that stop still runs.
func serveExample() (baseURL string, stop func()) {
	dir, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		panic(err)
	}
	st, err := boltstore.Open(filepath.Join(dir, "berth.db"), boltstore.Options{})
	if err != nil {
		panic(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := manager.New(manager.Options{Store: st, MaxPending: 10, Runtimes: []string{"docker"}, Logger: quiet})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Manager: m, Logger: quiet,
		Auth: httpapi.TokenAuth([]httpapi.TokenUser{
			{Token: "tok-root", User: "root", Admin: true},
			{Token: "tok-alice", User: "alice"},
			{Token: "tok-bob", User: "bob"},
		})}))
	return srv.URL, func() {
		srv.Close()
		_ = st.Close()
		_ = os.RemoveAll(dir)
	}
}

// publishSleeper publishes the template "sleeper" as the admin: users create
// containers only from templates an admin has published.
func publishSleeper(ctx context.Context, baseURL string) {
	admin, err := client.New(baseURL, "tok-root")
	if err != nil {
		panic(err)
	}
	tpl := map[string]any{"runtime": "docker", "image": "busybox:1", "command": []string{"sleep", "3600"}}
	if _, _, err := admin.PutTemplate(ctx, "sleeper", tpl); err != nil {
		panic(err)
	}
}

// A user creates a container from a template and reads it back. The API
// answers a create at once (202) with the instance pending: the container
// itself is made later by a worker, and Wait follows it from there.
func Example() {
	baseURL, stop := serveExample()
	defer stop()
	ctx := context.Background()
	publishSleeper(ctx, baseURL)

	alice, err := client.New(baseURL, "tok-alice")
	if err != nil {
		panic(err)
	}
	// An empty idempotency key: CreateContainer makes one, so that its own
	// retries (after a 429 or 503) can never create a second container.
	inst, err := alice.CreateContainer(ctx, client.CreateRequest{Template: "sleeper", Name: "notebook"}, "")
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", inst.Name, inst.Owner, inst.Status)

	got, err := alice.GetContainer(ctx, inst.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("read back:", got.ID == inst.ID, got.Status, "version", got.Version)
	// Output:
	// created: notebook alice pending
	// read back: true pending version 1
}

// Sending a create again with the same idempotency key (a retry after a
// lost answer, say) returns the container the first request made instead
// of making another.
func ExampleClient_CreateContainer_idempotencyKey() {
	baseURL, stop := serveExample()
	defer stop()
	ctx := context.Background()
	publishSleeper(ctx, baseURL)
	alice, err := client.New(baseURL, "tok-alice")
	if err != nil {
		panic(err)
	}

	key := client.NewIdempotencyKey()
	req := client.CreateRequest{Template: "sleeper", Labels: map[string]string{"course": "go-101"}}
	first, err := alice.CreateContainer(ctx, req, key)
	if err != nil {
		panic(err)
	}
	again, err := alice.CreateContainer(ctx, req, key)
	if err != nil {
		panic(err)
	}
	all, err := alice.ListAllContainers(ctx, client.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("same container:", again.ID == first.ID)
	fmt.Println("containers:", len(all))
	// Output:
	// same container: true
	// containers: 1
}

// Owners see only their own containers: to anyone else another user's
// container does not exist (404, never 403, so that ids cannot be probed),
// and listings hold only the caller's own. Labels filter a listing.
func ExampleClient_ListContainers() {
	baseURL, stop := serveExample()
	defer stop()
	ctx := context.Background()
	publishSleeper(ctx, baseURL)
	alice, err := client.New(baseURL, "tok-alice")
	if err != nil {
		panic(err)
	}
	bob, err := client.New(baseURL, "tok-bob")
	if err != nil {
		panic(err)
	}

	for _, course := range []string{"go-101", "go-101", "rust-201"} {
		req := client.CreateRequest{Template: "sleeper", Labels: map[string]string{"course": course}}
		if _, err := alice.CreateContainer(ctx, req, ""); err != nil {
			panic(err)
		}
	}
	goCourse, err := alice.ListContainers(ctx, client.ListOptions{Labels: map[string]string{"course": "go-101"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("alice, course go-101:", len(goCourse.Items))

	bobs, err := bob.ListContainers(ctx, client.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("bob sees:", len(bobs.Items))

	_, err = bob.GetContainer(ctx, goCourse.Items[0].ID)
	fmt.Println("bob reads alice's:", client.StatusCode(err), client.IsNotFound(err))
	// Output:
	// alice, course go-101: 2
	// bob sees: 0
	// bob reads alice's: 404 true
}
