package berthstack

import (
	"slices"
	"testing"

	"github.com/aws/constructs-go/constructs/v10"
)

// TestEKSClusters: with EksClusterArns the two workers, the reconciler, the watcher and logs, and no other
// function, may call eks:DescribeCluster, on exactly the named clusters; without it, none.
func TestEKSClusters(t *testing.T) {
	arns := []string{"arn:aws:eks:eu-west-1:123456789012:cluster/apps", "arn:aws:eks:eu-west-1:123456789012:cluster/batch"}
	for _, named := range [][]string{nil, arns} {
		s := synth(t, withProps(func(p *Props) { p.EksClusterArns = named }))
		stmts, _ := rolePermissions(t, s)
		var holders []string
		for name, c := range map[string]constructs.IConstruct{
			"api": s.stack.API.Function, "dispatcher": s.stack.Pipeline.Dispatcher, "create": s.stack.Workers.Create,
			"lifecycle": s.stack.Workers.Lifecycle, "reconciler": s.stack.Reconciler.Function,
			"watcher": s.stack.Watcher.Function, "logs": s.stack.Logs.Function,
		} {
			role := s.props(t, s.logicalID(t, c))["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
			var on []string
			for _, st := range stmts[role] {
				if st.action == "eks:DescribeCluster" {
					on = append(on, st.resource)
				}
			}
			if len(on) == 0 {
				continue
			}
			holders = append(holders, name)
			slices.Sort(on)
			if want := []string{`"` + arns[0] + `"`, `"` + arns[1] + `"`}; !slices.Equal(on, want) {
				t.Errorf("%s: eks:DescribeCluster on %v, want %v", name, on, want)
			}
		}
		slices.Sort(holders)
		want := []string{"create", "lifecycle", "logs", "reconciler", "watcher"}
		if named == nil {
			want = nil
		}
		if !slices.Equal(holders, want) {
			t.Errorf("EksClusterArns %v: functions that may describe clusters %v, want %v", named, holders, want)
		}
	}
	if _, err := LoadProps(lookupOf(map[string]string{ParamEksClusterArns: "apps"})); err == nil {
		t.Error("a cluster name instead of an ARN was accepted")
	}
}
