package container

import "testing"

func TestNewIDIsMonotonic(t *testing.T) {
	prev := NewID()
	for i := 0; i < 10000; i++ {
		next := NewID()
		if next <= prev {
			t.Fatalf("id %d: %s does not sort after %s", i, next, prev)
		}
		prev = next
	}
}
