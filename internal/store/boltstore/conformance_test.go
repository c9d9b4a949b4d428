package boltstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/store"
	"github.com/berth-io/berth/internal/store/storetest"
)

// newForSuite opens a fresh file per test (each storetest case wants an
// empty store) and closes it when the test ends.
func newForSuite(t testing.TB, now func() time.Time) store.Store {
	s, err := Open(filepath.Join(t.TempDir(), "berth.db"), Options{Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, newForSuite) }

func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, newForSuite) }
