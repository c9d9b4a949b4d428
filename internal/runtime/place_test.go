package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/berth-io/berth/internal/runtime"
)

type node struct {
	name     string
	capacity int
}

func (n node) NodeName() string  { return n.name }
func (n node) NodeCapacity() int { return n.capacity }

// TestChooseCountsOnlyToCompare: load is asked to count (list every
// object of a node) only when there is a choice or a capacity to check;
// otherwise it need only find this instance's object, and the answer is
// still the node, an earlier attempt's object, or the node's error.
func TestChooseCountsOnlyToCompare(t *testing.T) {
	earlier := "earlier attempt's object"
	down := errors.New("connection refused")
	cases := []struct {
		name      string
		nodes     []node
		loads     map[string]runtime.Load[string]
		wantCount bool
		wantNode  string
		wantObj   bool
		wantErr   bool
	}{
		{name: "one node without capacity", nodes: []node{{"a", 0}}, wantNode: "a"},
		{name: "one node with capacity", nodes: []node{{"a", 2}}, wantCount: true, wantNode: "a"},
		{name: "two nodes", nodes: []node{{"a", 0}, {"b", 0}}, wantCount: true, wantNode: "a",
			loads: map[string]runtime.Load[string]{"a": {Active: 1}, "b": {Active: 2}}},
		{name: "least loaded", nodes: []node{{"a", 0}, {"b", 0}}, wantCount: true, wantNode: "b",
			loads: map[string]runtime.Load[string]{"a": {Active: 3}, "b": {Active: 1}}},
		{name: "one node, object adopted", nodes: []node{{"a", 0}}, wantNode: "a", wantObj: true,
			loads: map[string]runtime.Load[string]{"a": {Existing: &earlier}}},
		{name: "one node down", nodes: []node{{"a", 0}}, wantErr: true,
			loads: map[string]runtime.Load[string]{"a": {Err: down}}},
		{name: "one node full", nodes: []node{{"a", 1}}, wantCount: true, wantErr: true,
			loads: map[string]runtime.Load[string]{"a": {Active: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var counts []bool
			var res runtime.Reservations
			got, err := runtime.Choose(context.Background(), &res, "i1", "test node", c.nodes,
				func(_ context.Context, n node, count bool) runtime.Load[string] {
					mu.Lock()
					counts = append(counts, count)
					mu.Unlock()
					return c.loads[n.name]
				})
			for _, count := range counts {
				if count != c.wantCount {
					t.Errorf("load asked with count %v, want %v", count, c.wantCount)
				}
			}
			if len(counts) != len(c.nodes) {
				t.Errorf("load asked %d times, want once per node (%d)", len(counts), len(c.nodes))
			}
			if c.wantErr {
				if !runtime.IsUnavailable(err) {
					t.Fatalf("err = %v, want unavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Node.name != c.wantNode || (got.Existing != nil) != c.wantObj {
				t.Errorf("chose %s (existing %v), want %s (existing %v)", got.Node.name, got.Existing != nil, c.wantNode, c.wantObj)
			}
			got.Release()
		})
	}
}
