package berthstack

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestVPCAccessOnlyInVPC: the VPC access policy (network interfaces) is on the roles of the
// functions that reach the runtimes (workers, reconciler, watcher, logs, exec) and the notify function (private receivers) when subnets are given, and on no role without them
// (cdk-nag's IAM4 then has nothing to say about it in a stack without a VPC).
func TestVPCAccessOnlyInVPC(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subnets []string
		want    int
	}{
		{name: "no VPC", want: 0},
		{name: "VPC", subnets: []string{"subnet-0a1b2c3d4e5f60718"}, want: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) {
				p.SubnetIDs = tc.subnets
				if len(tc.subnets) > 0 {
					p.SecurityGroupIDs = []string{"sg-0a1b2c3d4e5f60718"}
				}
			}))
			n := 0
			for id, props := range s.ofType("AWS::IAM::Role") {
				b, err := json.Marshal(props["ManagedPolicyArns"])
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "AWSLambdaVPCAccessExecutionRole") {
					n++
					t.Logf("%s has the VPC access policy", id)
				}
			}
			if n != tc.want {
				t.Errorf("%d roles with the VPC access policy, want %d", n, tc.want)
			}
		})
	}
}
