package berthstack

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// nagPack is one of cdk-nag's rule packs: the prefix of its rule ids and how to make it.
type nagPack struct {
	prefix string
	make   func(*cdknag.NagPackProps) awscdk.IAspect
}

// requiredNagPacks must find nothing NagSuppressions does not keep with a reason.
var requiredNagPacks = []nagPack{
	{"AwsSolutions", func(p *cdknag.NagPackProps) awscdk.IAspect { return cdknag.NewAwsSolutionsChecks(p) }},
	{"Serverless", func(p *cdknag.NagPackProps) awscdk.IAspect { return cdknag.NewServerlessChecks(p) }},
}

// reportNagPacks are the compliance packs whose findings TestNag only reports (with
// BERTH_NAG_REPORT=1): docs/deploy.md says what each still flags and why it is left.
var reportNagPacks = []nagPack{
	{"NIST.800.53.R5", func(p *cdknag.NagPackProps) awscdk.IAspect { return cdknag.NewNIST80053R5Checks(p) }},
	{"HIPAA.Security", func(p *cdknag.NagPackProps) awscdk.IAspect { return cdknag.NewHIPAASecurityChecks(p) }},
	{"PCI.DSS.321", func(p *cdknag.NagPackProps) awscdk.IAspect { return cdknag.NewPCIDSS321Checks(p) }},
}

// nagRule is the rule id at the start of a finding's message.
var nagRule = regexp.MustCompile(`^([A-Za-z0-9.]+)-([A-Za-z0-9.]+)`)

// nagFindings synthesizes the stack for p, with NagSuppressions, under the packs and returns
// the findings left (errors and warnings), one line each, by pack prefix.
func nagFindings(t *testing.T, p Props, packs []nagPack) map[string][]string {
	t.Helper()
	if p.DistDir == DefaultDistDir || p.DistDir == "" {
		p.DistDir = fakeDist(t, t.TempDir())
	}
	out := map[string][]string{}
	jsiiDo(t, "cdk-nag", func() {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		stack, err := New(app, "berth", nil, p)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		NagSuppressions(stack, p)
		for _, pack := range packs {
			awscdk.Aspects_Of(app).Add(pack.make(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		}
		an := assertions.Annotations_FromStack(stack.Stack)
		match := assertions.Match_StringLikeRegexp(jsii.String(".*"))
		for _, msgs := range []*[]*cxapi.SynthesisMessage{an.FindError(jsii.String("*"), match), an.FindWarning(jsii.String("*"), match)} {
			for _, m := range *msgs {
				data := fmt.Sprint(m.Entry.Data)
				for _, pack := range packs {
					if strings.HasPrefix(data, pack.prefix+"-") {
						out[pack.prefix] = append(out[pack.prefix], fmt.Sprintf("%s: %s", *m.Id, data))
					}
				}
			}
		}
	})
	for _, f := range out {
		sort.Strings(f)
	}
	return out
}

// TestNag: cdk-nag's AwsSolutions and Serverless packs find nothing in the stack that
// NagSuppressions does not keep with a reason, for each parity parameter set (template.yaml
// has the same resources) and with MFA required. With BERTH_NAG_REPORT=1 it also runs the
// NIST 800-53 R5, HIPAA Security and PCI DSS 3.2.1 packs and logs what they find, by rule.
func TestNag(t *testing.T) {
	for _, sup := range stackNagSuppressions {
		if len(sup.Reason) < 40 {
			t.Errorf("%s: the reason %q says too little", sup.ID, sup.Reason)
		}
	}
	packs := requiredNagPacks
	report := os.Getenv("BERTH_NAG_REPORT") == "1"
	if report {
		packs = append(append([]nagPack{}, requiredNagPacks...), reportNagPacks...)
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
			found := nagFindings(t, p, packs)
			for _, pack := range requiredNagPacks {
				for _, f := range found[pack.prefix] {
					t.Error(f)
				}
			}
			if report {
				for _, pack := range packs {
					byRule := map[string]int{}
					for _, f := range found[pack.prefix] {
						_, data, _ := strings.Cut(f, ": ")
						byRule[nagRule.FindString(data)]++
					}
					t.Logf("NAGREPORT %s: %d unsuppressed %v", pack.prefix, len(found[pack.prefix]), byRule)
				}
			}
		})
	}
}
