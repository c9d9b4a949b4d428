package dockertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/testenv"
)

// PublishingNetwork makes a bridge network on the test engine at endpoint
// whose published ports bind on 127.0.0.1 only, so that a test can see
// the host ports the engine chooses (network none publishes nothing) and
// reach them over loopback while no traffic leaves the machine. It is
// removed when the test ends, after the containers of runtimes made since
// (cleanups run last first). It returns the network's name, a host's
// network_mode.
func PublishingNetwork(t testing.TB, endpoint string) string {
	t.Helper()
	cli, err := client.New(client.WithHost(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	name := "berth-test-" + strings.ToLower(container.NewID())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge",
		Options: map[string]string{"com.docker.network.bridge.host_binding_ipv4": "127.0.0.1"},
		Labels:  map[string]string{"berth.test": "true"}}); err != nil {
		_ = cli.Close()
		testenv.Missing(t, "a Docker engine that makes bridge networks", err.Error())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("dockertest cleanup: remove network %s: %v", name, err)
		}
		_ = cli.Close()
	})
	return name
}
