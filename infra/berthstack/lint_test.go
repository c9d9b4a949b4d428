package berthstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth-io/berth/internal/testenv"
)

// lintIgnored are cfn-lint checks the CDK's own constructs trip on purpose:
// W3005 (a DependsOn already implied by a GetAtt): the Function construct makes each function
// depend on its role explicitly.
var lintIgnored = []string{"W3005"}

// TestCfnLint: cfn-lint finds nothing in the synthesized template, warnings included (but for
// lintIgnored), for each parity parameter set.
func TestCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		testenv.Missing(t, "cfn-lint", err.Error())
	}
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			props, err := LoadProps(lookupOf(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.MarshalIndent(synth(t, props).template, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "berth.template.json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// The synth above drives jsii, which takes one caller at a time: each case
			// synthesizes in turn, and only cfn-lint (a Python process of its own,
			// ~30-60 s a case on 2 cores) runs beside the other cases' lints.
			t.Parallel()
			args := []string{"--format", "parseable"}
			for _, c := range lintIgnored {
				args = append(args, "--ignore-checks", c)
			}
			out, err := exec.Command(lint, append(args, "--", path)...).CombinedOutput()
			if err != nil {
				t.Errorf("cfn-lint: %v\n%s", err, out)
			}
		})
	}
}
