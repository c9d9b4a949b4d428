package berth_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestTemplateEventBus: every function writes status changes with the
// event bus configured (BERTH_WEBHOOKS_EVENT_BUS, the EventBusName
// parameter, "default" unless given), and only the notify function, which
// the deliveries reach, may events:PutEvents, on that bus only.
func TestTemplateEventBus(t *testing.T) {
	c := loadTemplate(t)
	if d := scalar(c.param("EventBusName")["Default"]); d != "default" {
		t.Errorf("EventBusName defaults to %q; want default", d)
	}
	for _, f := range functions {
		if v := c.resolve(c.env(f.logicalID)["BERTH_WEBHOOKS_EVENT_BUS"]); v != "default" {
			t.Errorf("%s: BERTH_WEBHOOKS_EVENT_BUS = %q at the defaults; want default", f.logicalID, v)
		}
	}
	// puts maps each owner (a function, or a role written out) to the
	// resources it may events:PutEvents on.
	puts := map[string][]string{}
	check := func(owner string, stmts []any) {
		for _, st := range stmts {
			st := asMap(st)
			acts := asList(st["Action"])
			if a, ok := st["Action"].(string); ok {
				acts = []any{a}
			}
			for _, a := range acts {
				a := scalar(a)
				if strings.HasPrefix(a, "events:") {
					if a != "events:PutEvents" {
						t.Errorf("%s: %s; only events:PutEvents is needed", owner, a)
					}
					puts[owner] = append(puts[owner], fmt.Sprint(st["Resource"]))
				}
			}
		}
	}
	for name, fn := range c.resourcesOf("AWS::Serverless::Function") {
		for _, p := range asList(fn["Policies"]) {
			check(name, asList(asMap(p)["Statement"]))
		}
	}
	for name, role := range c.resourcesOf("AWS::IAM::Role") {
		for _, p := range asList(role["Policies"]) {
			p := asMap(p)
			if ifs := asList(p["Fn::If"]); len(ifs) == 3 {
				p = asMap(ifs[1])
			}
			check(name, asList(asMap(p["PolicyDocument"])["Statement"]))
		}
	}
	owners := make([]string, 0, len(puts))
	for o := range puts {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	if !slices.Equal(owners, []string{"NotifyFunctionRole"}) {
		t.Fatalf("events:PutEvents granted to %v; want the notify function's role only", owners)
	}
	want := "map[Fn::Sub:arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${EventBusName}]"
	if res := puts["NotifyFunctionRole"]; len(res) != 1 || res[0] != want {
		t.Errorf("events:PutEvents on %v; want %s only", res, want)
	}
}
