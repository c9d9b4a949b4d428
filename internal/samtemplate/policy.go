package samtemplate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Statement is one IAM policy statement, as the template writes it.
type Statement struct {
	Effect    string
	Actions   []string
	Resources []string
}

// Allows reports whether the function's statements allow action on
// resource (an ARN), as IAM evaluates them: an explicit Deny wins, and
// "*" in an action or a resource matches any run of characters.
func (f *Function) Allows(action, resource string) bool {
	allowed := false
	for _, s := range f.Statements {
		if !slices.ContainsFunc(s.Actions, func(a string) bool { return wildcard(a, action, true) }) ||
			!slices.ContainsFunc(s.Resources, func(r string) bool { return wildcard(r, resource, false) }) {
			continue
		}
		if s.Effect == "Deny" {
			return false
		}
		allowed = allowed || s.Effect == "Allow"
	}
	return allowed
}

// wildcard matches s against pattern, in which '*' is any run and '?' any
// one character; actions are matched without regard to case, as IAM does.
func wildcard(pattern, s string, fold bool) bool {
	re := "^" + strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*"), `\?`, ".") + "$"
	if fold {
		re = "(?i)" + re
	}
	ok, err := regexp.MatchString(re, s)
	return err == nil && ok
}

// statements reads the inline statements of a function's resolved
// Policies; strings (managed policies) and SAM policy templates are
// skipped.
func statements(policies []any) []Statement {
	var out []Statement
	for _, p := range policies {
		m, _ := p.(map[string]any)
		list, _ := m["Statement"].([]any)
		for _, st := range list {
			sm, _ := st.(map[string]any)
			if sm == nil {
				continue
			}
			effect, _ := sm["Effect"].(string)
			out = append(out, Statement{Effect: effect, Actions: stringList(sm["Action"]), Resources: stringList(sm["Resource"])})
		}
	}
	return out
}

// stringList is a string or a list of strings as a list.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// roleStatements reads the inline policies of the role a function is given
// by Role: !GetAtt SomeRole.Arn, when SomeRole is an AWS::IAM::Role of the
// template: a function with a role of its own has no SAM Policies, and its
// permissions are the role's.
func (p *parser) roleStatements(id string) ([]Statement, error) {
	props, _ := p.resources[id]["Properties"].(map[string]any)
	role, _ := props["Role"].(map[string]any)
	var roleID string
	switch a := role["Fn::GetAtt"].(type) {
	case string:
		roleID, _, _ = strings.Cut(a, ".")
	case []any:
		if len(a) == 2 {
			roleID, _ = a[0].(string)
		}
	}
	if roleID == "" || p.typeOf(roleID) != "AWS::IAM::Role" {
		return nil, nil
	}
	rp, err := p.resolved(roleID)
	if err != nil {
		return nil, fmt.Errorf("role %s: %w", roleID, err)
	}
	pols, _ := rp["Policies"].([]any)
	docs := make([]any, 0, len(pols))
	for _, pol := range pols {
		m, _ := pol.(map[string]any)
		docs = append(docs, m["PolicyDocument"])
	}
	return statements(docs), nil
}
