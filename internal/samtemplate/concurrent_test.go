package samtemplate

import (
	"sync"
	"testing"
)

// TestParseConcurrent parses from several goroutines at once, as emulated
// stacks starting side by side do: under -race it fails if goformation's
// package-level tag map is written by two calls at once.
func TestParseConcurrent(t *testing.T) {
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Parse([]byte(sample), Options{StackName: "st"})
			if err == nil && len(s.Functions) == 0 {
				t.Error("parsed no functions")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
