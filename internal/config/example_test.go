package config_test

import (
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/config"
)

// envOf looks variables up in a map, as os.LookupEnv does in the process
// environment: Load takes the lookup, so tests and examples need not touch
// the real environment.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// The file sets keys over the defaults and the environment sets keys over
// the file: BERTH_<SECTION>_<KEY>, derived from the YAML key. A key neither
// sets keeps its default.
func ExampleLoadData() {
	file := []byte(`
server:
  addr: 127.0.0.1:9090
container:
  create_queue_max_pending: 20
  max_attempts: 5
`)
	env := envOf(map[string]string{"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING": "10"})

	cfg, err := config.LoadData("config.yml", file, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server.addr:", cfg.Server.Addr)                                            // from the file
	fmt.Println("container.max_attempts:", cfg.Container.MaxAttempts)                       // from the file
	fmt.Println("container.create_queue_max_pending:", cfg.Container.CreateQueueMaxPending) // from the environment
	fmt.Println("container.orphan_grace:", cfg.Container.OrphanGrace)                       // the default
	// Output:
	// server.addr: 127.0.0.1:9090
	// container.max_attempts: 5
	// container.create_queue_max_pending: 10
	// container.orphan_grace: 5m0s
}

// Every invalid value is reported at once, each naming its key and where
// the value came from (the file's line or the variable), so one failed
// start shows everything to fix.
func ExampleFieldError() {
	file := []byte("container:\n  max_attempts: 0\n")
	env := envOf(map[string]string{"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING": "-1"})

	_, err := config.LoadData("config.yml", file, env)
	fmt.Println(err)

	var fe *config.FieldError
	if errors.As(err, &fe) {
		fmt.Println("first:", fe.Key, "from", fe.Source)
	}
	// Output:
	// config: container.create_queue_max_pending: must be ≥ 1, got -1 (from BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING)
	// config: container.max_attempts: must be ≥ 1, got 0 (from config.yml:2)
	// first: container.create_queue_max_pending from BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING
}
