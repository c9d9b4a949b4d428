package hostpolicy_test

import (
	"fmt"

	"github.com/berth-io/berth/internal/hostpolicy"
)

// A node's roots (a Docker host's allowed_bind_roots, a cluster's
// allowed_host_path_roots) are checked once, with the configuration: "/"
// would hand a container the node. A bind source is then allowed when it
// lies under one of its node's roots, after cleaning, so ".." cannot climb
// out.
func ExampleHostPathAllowed() {
	fmt.Println(hostpolicy.CheckRoot("/srv/berth"))
	fmt.Println(hostpolicy.CheckRoot("/"))

	roots := []string{"/srv/berth"}
	fmt.Println(hostpolicy.HostPathAllowed("/srv/berth/alice/data", roots))
	fmt.Println(hostpolicy.HostPathAllowed("/srv/berth/../../etc", roots))
	fmt.Println(hostpolicy.HostPathAllowed("/srv/berth", nil))
	// Output:
	// <nil>
	// must not be / (it would allow binding any host path)
	// <nil>
	// bind source "/srv/berth/../../etc" is outside the allowed roots [/srv/berth]
	// bind source "/srv/berth": this node allows no host paths
}
