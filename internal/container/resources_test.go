package container_test

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
)

func TestParseResources(t *testing.T) {
	cpus := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"1", 1000, true}, {"0.5", 500, true}, {"500m", 500, true}, {"2.25", 2250, true},
		{"1m", 1, true}, {"1024", 1024000, true}, {"1e2", 100000, true},
		{"1n", 0, false}, {"0.0001", 0, false}, {"1e18", 0, false}, {"1025", 0, false},
		{"-1", 0, false}, {"0", 0, false}, {"1/2", 0, false}, {"x", 0, false}, {" 1", 0, false},
	}
	for _, c := range cpus {
		got, err := container.ParseCPU(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseCPU(%q) = %d, %v; want %d, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	mems := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"4Mi", 4 << 20, true}, {"256Mi", 256 << 20, true}, {"1Gi", 1 << 30, true},
		{"1.5Gi", 3 << 29, true}, {"512M", 512e6, true}, {"1Pi", 1 << 50, true}, {"4194304", 4 << 20, true},
		{"1024", 0, false}, {"9Ei", 0, false}, {"8Ei", 0, false}, {"2Pi", 0, false},
		{"0", 0, false}, {"-1Gi", 0, false}, {"12Q", 0, false}, {"Mi", 0, false},
	}
	for _, c := range mems {
		got, err := container.ParseMemory(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
