package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store"
)

// envCrashChild, when set to a file path, turns TestCrashSafety into the
// child: it writes to that store until it is killed.
const envCrashChild = "BOLTSTORE_CRASH_CHILD"

// TestCrashSafety kills a writing process with SIGKILL and checks that every
// write it reported as committed survived and that the file is consistent.
//
// The child re-executes this test binary. It creates instances and moves
// half of them to creating, printing one line per committed write only after
// the store method returned, so each line is a promise the store made. The
// parent reads those lines, sends SIGKILL after killAfter of them (the child
// is writing flat out, so the kill usually lands inside a transaction or
// its fsync), drains what was printed before the kill, then reopens the
// file. Three rounds on the same file check that recovery after a kill is
// itself a state that survives the next kill.
func TestCrashSafety(t *testing.T) {
	if path := os.Getenv(envCrashChild); path != "" {
		crashChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	const rounds = 3
	path := filepath.Join(t.TempDir(), "crash.db")
	created := map[string]bool{}
	moved := map[string]int64{} // id → version the child saw committed
	for round := range rounds {
		// Odd and even counts stop the child after a create or after a move.
		lines := runAndKill(t, path, 150+round*7)
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "created":
				created[f[1]] = true
			case len(f) == 3 && f[0] == "moved":
				v, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					t.Fatalf("bad child line %q", l)
				}
				moved[f[1]] = v
			default:
				t.Fatalf("bad child line %q", l)
			}
		}
		t.Logf("round %d: child reported %d commits before SIGKILL", round, len(lines))
		checkCommitted(t, path, created, moved)
		checkFile(t, path)
	}
}

// runAndKill starts the child on path, kills it after n commit lines and
// returns every commit line it printed.
func runAndKill(t *testing.T, path string, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashChild+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "created ") && !strings.HasPrefix(l, "moved ") {
			continue // the testing package's own output
		}
		lines = append(lines, l)
		if len(lines) == 1 {
			// The child holds the file now: a second process must be
			// turned away, not left hanging.
			if s, err := Open(path, Options{OpenTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
				if err == nil {
					_ = s.Close()
				}
				_ = cmd.Process.Kill()
				t.Fatalf("open while another process holds the file: %v, want ErrLocked", err)
			}
		}
		if len(lines) == n && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by itself after %d commits (%v); stderr:\n%s", len(lines), err, stderr.String())
	}
	return lines
}

// crashChild writes until killed. It stops by itself only if the parent is
// gone (stdout broken) or after a bound far beyond what the parent waits for.
func crashChild(t *testing.T, path string) {
	s, err := Open(path, Options{OpenTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 1_000_000 {
		in := newInstance(fmt.Sprintf("owner-%d", i%3))
		if _, err := s.CreateInstance(ctx, createParams(in)); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Printf("created %s\n", in.ID); err != nil {
			return
		}
		if i%2 == 1 {
			continue
		}
		next, err := s.Transition(ctx, store.TransitionParams{
			ID: in.ID, ExpectVersion: 1, From: fsm.Pending, To: fsm.Creating,
			Event: &container.Event{Type: container.EventCreating},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Printf("moved %s %d\n", in.ID, next.Version); err != nil {
			return
		}
	}
	t.Fatal("child was never killed")
}

// checkCommitted reopens the store and finds every reported write.
func checkCommitted(t *testing.T, path string, created map[string]bool, moved map[string]int64) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for id := range created {
		in, err := s.GetInstance(ctx, id)
		if err != nil {
			t.Fatalf("committed instance %s lost: %v", id, err)
		}
		if v, ok := moved[id]; ok && (in.Version < v || in.Status != fsm.Creating) {
			t.Fatalf("committed transition of %s lost: version %d status %s, child saw %d", id, in.Version, in.Status, v)
		}
	}
	// The counter is written in the same transactions as the instances, so
	// a torn write would show as a difference here.
	before, after, err := s.RepairAdmission(ctx)
	if err != nil || before != after {
		t.Fatalf("admission counter %d, instances holding slots %d (%v)", before, after, err)
	}
}

// checkFile runs bbolt's page-level check, then checks that records and
// index entries agree: every instance has both index entries and gapless
// events up to its EventSeq, and no index entry points nowhere.
func checkFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("bbolt check: %w", err)
		}
		owners, statuses, n := tx.Bucket(bucketOwnerIdx), tx.Bucket(bucketStatusIdx), 0
		err := tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			n++
			var rec instanceRecord
			if err := decodeJSON(k, v, &rec); err != nil {
				return err
			}
			in := rec.instance()
			if owners.Get(joinKey(in.Owner, in.ID)) == nil || statuses.Get(joinKey(string(in.Status), in.ID)) == nil {
				return fmt.Errorf("instance %s is missing an index entry", in.ID)
			}
			for seq := int64(1); seq <= in.EventSeq; seq++ {
				if tx.Bucket(bucketEvents).Get(eventKey(in.ID, seq)) == nil {
					return fmt.Errorf("instance %s: event %d of %d missing", in.ID, seq, in.EventSeq)
				}
			}
			if tx.Bucket(bucketEvents).Get(eventKey(in.ID, in.EventSeq+1)) != nil {
				return fmt.Errorf("instance %s: event after EventSeq %d", in.ID, in.EventSeq)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if o, s := owners.Stats().KeyN, statuses.Stats().KeyN; o != n || s != n {
			return fmt.Errorf("%d instances, %d owner index entries, %d status index entries", n, o, s)
		}
		t.Logf("file holds %d instances and passes the checks", n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
