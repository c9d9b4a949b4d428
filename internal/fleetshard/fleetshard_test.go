package fleetshard

import (
	"fmt"
	"testing"
)

func TestCount(t *testing.T) {
	for _, c := range []struct{ configured, nodes, want int }{
		{0, 0, 1}, {0, 1, 1}, {0, 100, 1}, {0, 101, 2}, {0, 1000, 10},
		{3, 1000, 3}, {5000, 1, Buckets},
	} {
		if got := Count(c.configured, c.nodes); got != c.want {
			t.Errorf("Count(%d, %d) = %d, want %d", c.configured, c.nodes, got, c.want)
		}
	}
}

// TestEveryBucketOneOwner: under any count, each bucket (and so each node)
// has exactly one shard, and the whole shard owns all of them.
func TestEveryBucketOneOwner(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 10, 64, Buckets} {
		owners := make([]int, Buckets)
		for _, s := range All(n) {
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, b := range s.Buckets() {
				owners[b]++
			}
		}
		for b, k := range owners {
			if k != 1 {
				t.Fatalf("%d shards: bucket %d has %d owners", n, b, k)
			}
		}
	}
	if got := len(Whole().Buckets()); got != Buckets {
		t.Fatalf("the whole shard owns %d buckets", got)
	}
	if !(Shard{}).IsWhole() || !(Shard{}).Leads() {
		t.Fatal("the zero shard is not the whole fleet")
	}
}

// TestBucketStable: a node's bucket is the same in every build (stored layout), depends on its kind, and
// 1,000 hosts spread over 10 shards within a factor of two of even.
func TestBucketStable(t *testing.T) {
	// The bucket is part of the stored layout: these values must never change.
	if got := BucketOf("docker", "h1"); got != 449 {
		t.Fatalf(`BucketOf("docker", "h1") = %d, was 449`, got)
	}
	if got := BucketOf("kubernetes", "eks-a"); got != 357 {
		t.Fatalf(`BucketOf("kubernetes", "eks-a") = %d, was 357`, got)
	}
	if BucketOf("docker", "a") == BucketOf("kubernetes", "a") && BucketOf("docker", "b") == BucketOf("kubernetes", "b") {
		t.Fatal("the kind is not part of the bucket")
	}
	per := make(map[int]int)
	for i := range 1000 {
		for _, s := range All(10) {
			if s.OwnsNode("docker", fmt.Sprintf("host-%04d", i)) {
				per[s.Index]++
			}
		}
	}
	for i := range 10 {
		if per[i] < 50 || per[i] > 200 {
			t.Fatalf("shard %d holds %d of 1,000 hosts: %v", i, per[i], per)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []Shard{{Index: 2, Count: 2}, {Index: -1, Count: 2}, {Index: 0, Count: Buckets + 1}, {Index: 1, Count: 0}} {
		if s.Validate() == nil {
			t.Errorf("%+v: want an error", s)
		}
	}
	if s := (Shard{Index: 3, Count: 10}); s.String() != "3/10" || s.Leads() {
		t.Fatalf("%v leads or prints wrong", s)
	}
}
