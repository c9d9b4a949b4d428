package berthstack

import (
	"fmt"
	"sort"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// nagFindings synthesizes the stack for p, with NagSuppressions, under cdk-nag's AwsSolutions
// pack and returns the findings left (errors and warnings), one line each.
func nagFindings(t *testing.T, p Props) []string {
	t.Helper()
	if p.DistDir == DefaultDistDir || p.DistDir == "" {
		p.DistDir = fakeDist(t, t.TempDir())
	}
	var out []string
	jsiiDo(t, "cdk-nag", func() {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		stack, err := New(app, "berth", nil, p)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		NagSuppressions(stack, p)
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		an := assertions.Annotations_FromStack(stack.Stack)
		match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
		for _, msgs := range []*[]*cxapi.SynthesisMessage{an.FindError(jsii.String("*"), match), an.FindWarning(jsii.String("*"), match)} {
			for _, m := range *msgs {
				out = append(out, fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data))
			}
		}
	})
	sort.Strings(out)
	return out
}

// TestNag: cdk-nag's AwsSolutions pack finds nothing in the stack that NagSuppressions does not
// keep with a reason, for each parity parameter set (template.yaml has the same resources) and
// with MFA required.
func TestNag(t *testing.T) {
	for _, sup := range stackNagSuppressions {
		if len(sup.Reason) < 40 {
			t.Errorf("%s: the reason %q says too little", sup.ID, sup.Reason)
		}
	}
	cases := append([]struct {
		name   string
		params map[string]string
	}{{name: "MFA required", params: map[string]string{ParamUserPoolMfa: "ON"}}}, parityCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadProps(lookupOf(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range nagFindings(t, p) {
				t.Error(f)
			}
		})
	}
}
