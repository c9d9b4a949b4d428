package container_test

import (
	"fmt"

	"github.com/berth-io/berth/internal/container"
)

// A template's resources.cpu is written as Kubernetes writes quantities:
// cores or millicores, "" for no limit. Every runtime receives millicores, and a value no
// runtime could apply is refused when the template is written.
func ExampleParseCPU() {
	for _, s := range []string{"0.5", "2", "250m", "", "1n"} {
		m, err := container.ParseCPU(s)
		fmt.Printf("%q → %d millicores, %v\n", s, m, err)
	}
	// Output:
	// "0.5" → 500 millicores, <nil>
	// "2" → 2000 millicores, <nil>
	// "250m" → 250 millicores, <nil>
	// "" → 0 millicores, <nil>
	// "1n" → 0 millicores, cpu "1n": want 1m to 1024 cores
}

// resources.memory takes binary ("Mi", "Gi") and decimal ("M") suffixes and
// becomes bytes; below 4Mi a process cannot start, so it is refused.
func ExampleParseMemory() {
	for _, s := range []string{"256Mi", "1Gi", "512M", "1Mi"} {
		b, err := container.ParseMemory(s)
		fmt.Printf("%q → %d bytes, %v\n", s, b, err)
	}
	// Output:
	// "256Mi" → 268435456 bytes, <nil>
	// "1Gi" → 1073741824 bytes, <nil>
	// "512M" → 512000000 bytes, <nil>
	// "1Mi" → 0 bytes, memory "1Mi": want 4Mi to 1Pi
}
