package berth_test

import (
	"reflect"
	"slices"
	"testing"
)

// TestTemplateEKSClusters: the functions that reach the runtimes (the two
// workers, the reconciler and the watcher) may call eks:DescribeCluster on the clusters
// EksClusterArns names and on nothing else, only when some are named; the
// api and dispatcher functions never.
func TestTemplateEKSClusters(t *testing.T) {
	c := loadTemplate(t)
	if p := asMap(asMap(c.doc["Parameters"])["EksClusterArns"]); p["Type"] != "CommaDelimitedList" || p["Default"] != "" {
		t.Errorf("EksClusterArns parameter: %v", p)
	}
	for _, f := range functions {
		var grants []map[string]any
		for _, pol := range c.functionPolicies(f.logicalID) {
			p := asMap(pol)
			cond := ""
			if ifs := asList(p["Fn::If"]); ifs != nil {
				cond, p = scalar(ifs[0]), asMap(ifs[1])
			}
			for _, st := range asList(p["Statement"]) {
				st := asMap(st)
				if slices.Contains(asList(st["Action"]), any("eks:DescribeCluster")) || st["Action"] == "eks:DescribeCluster" {
					if cond != "HasEksClusters" {
						t.Errorf("%s: eks:DescribeCluster granted under condition %q, want HasEksClusters", f.logicalID, cond)
					}
					grants = append(grants, st)
				}
			}
		}
		want := 0
		if f.kind == "worker" || f.kind == "reconciler" || f.kind == "watcher" || f.kind == "logs" || f.kind == "exec" {
			want = 1
		}
		if len(grants) != want {
			t.Errorf("%s: %d eks:DescribeCluster statements, want %d", f.logicalID, len(grants), want)
			continue
		}
		for _, st := range grants {
			if !reflect.DeepEqual(st["Resource"], map[string]any{"Ref": "EksClusterArns"}) || !reflect.DeepEqual(st["Action"], []any{"eks:DescribeCluster"}) {
				t.Errorf("%s: %v, want eks:DescribeCluster on the EksClusterArns only", f.logicalID, st)
			}
		}
	}
}
