package cfnshape

import (
	"fmt"
	"strings"
)

// Normalize rewrites what the SAM transform and the CDK write differently for the same
// deployed result, so that Compare sees only real differences:
//
//   - tags the tools add to mark what made a resource (lambda:createdBy, httpapi:createdBy);
//   - a function's Code: each tool uploads the same bootstrap to its own asset location;
//   - IAM: policies attached to a role (AWS::IAM::Policy), inline ones and statement
//     groupings become one set of (effect, action, resource) permissions on the role; Sids
//     and policy names are dropped;
//   - a Lambda permission's SourceArn: the template scopes it to the API (/*), the CDK to the route's
//     own path; both name the same API, which is what is compared; and its FunctionName, a
//     name or an ARN for the same function;
//   - an async invoke config's empty DestinationConfig, which SAM writes for none;
//   - the CDK's own metadata resource.
func Normalize(r *Resolved) {
	for id, res := range r.Resources {
		if res.Type == "AWS::CDK::Metadata" {
			delete(r.Resources, id)
			continue
		}
		props := asMap(res.Body["Properties"])
		dropToolTags(props)
		switch res.Type {
		case "AWS::Lambda::Function":
			delete(props, "Code")
		case "AWS::Lambda::EventInvokeConfig":
			if d, ok := props["DestinationConfig"].(map[string]any); ok && len(d) == 0 {
				delete(props, "DestinationConfig")
			}
		case "AWS::Lambda::Permission":
			props["FunctionName"] = refTo(firstRef(props["FunctionName"]))
			if api := firstRef(props["SourceArn"]); api != nil {
				props["SourceArn"] = Ref{ID: api.ID}
			}
		}
	}
	mergePolicies(r)
}

func dropToolTags(props map[string]any) {
	switch tags := props["Tags"].(type) {
	case []any:
		var keep []any
		for _, t := range tags {
			if !toolTag(fmt.Sprint(asMap(t)["Key"])) {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			delete(props, "Tags")
		} else {
			props["Tags"] = keep
		}
	case map[string]any:
		for k := range tags {
			if toolTag(k) {
				delete(tags, k)
			}
		}
		if len(tags) == 0 {
			delete(props, "Tags")
		}
	}
}

func toolTag(key string) bool { return strings.HasSuffix(key, ":createdBy") }

// mergePolicies folds AWS::IAM::Policy resources into the roles they attach to, and every
// role's policies into Permissions: a sorted set of statements, one action and one resource
// each.
func mergePolicies(r *Resolved) {
	extra := map[string][]any{}
	for id, res := range r.Resources {
		if res.Type != "AWS::IAM::Policy" {
			continue
		}
		props := asMap(res.Body["Properties"])
		stmts := asList(asMap(props["PolicyDocument"])["Statement"])
		for _, role := range asList(props["Roles"]) {
			if ref, ok := role.(Ref); ok {
				extra[ref.ID] = append(extra[ref.ID], stmts...)
			}
		}
		delete(r.Resources, id)
	}
	for id, res := range r.Resources {
		if res.Type != "AWS::IAM::Role" {
			continue
		}
		props := asMap(res.Body["Properties"])
		stmts := extra[id]
		for _, pol := range asList(props["Policies"]) {
			stmts = append(stmts, asList(asMap(asMap(pol)["PolicyDocument"])["Statement"])...)
		}
		delete(props, "Policies")
		if len(stmts) > 0 {
			props["Permissions"] = permissions(stmts)
		}
		if doc := asMap(props["AssumeRolePolicyDocument"]); doc != nil {
			props["AssumeRolePolicyDocument"] = permissions(asList(doc["Statement"]))
		}
	}
}

// permissions splits statements into one entry per effect, action, resource (or principal)
// and condition, without duplicates: "Allow sqs:SendMessage on <CreateQueue>.Arn".
func permissions(stmts []any) []any {
	seen := map[string]bool{}
	var out []any
	for _, s := range stmts {
		st := asMap(s)
		var targets []any
		for _, r := range asList(st["Resource"]) {
			targets = append(targets, concat{" on ", r})
		}
		for kind, v := range asMap(st["Principal"]) {
			for _, p := range asList(v) {
				targets = append(targets, concat{" by " + kind + " ", p})
			}
		}
		cond := ""
		if c, ok := st["Condition"]; ok {
			cond = " if " + canonical(c)
		}
		for _, action := range asList(st["Action"]) {
			for _, t := range targets {
				e := simplify(concat{fmt.Sprint(st["Effect"]) + " " + fmt.Sprint(action), t, cond})
				if k := canonical(e); !seen[k] {
					seen[k] = true
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// firstRef is the first resource reference in v (a Ref, or a part of a joined string).
func firstRef(v any) *Ref {
	switch v := v.(type) {
	case Ref:
		return &v
	case concat:
		for _, p := range v {
			if r := firstRef(p); r != nil {
				return r
			}
		}
	}
	return nil
}

// refTo is a function reference as both tools mean it: the function itself, whichever
// attribute names it.
func refTo(r *Ref) any {
	if r == nil {
		return nil
	}
	return Ref{ID: r.ID}
}

func asList(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case nil:
		return nil
	default:
		return []any{v}
	}
}
