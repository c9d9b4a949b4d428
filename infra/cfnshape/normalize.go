package cfnshape

import (
	"fmt"
	"sort"
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
//   - the HTTP API: SAM writes routes, integrations and the JWT authorizer into the API's
//     OpenAPI Body, the CDK as Route, Integration and Authorizer resources; both become one
//     "Route" resource per route with its authorizer and integration;
//   - a Lambda permission's SourceArn: SAM scopes it to /*/*/api/*, the CDK to the route's
//     own path; both name the same API, which is what is compared; and its FunctionName, a
//     name or an ARN for the same function;
//   - a schedule's Name: SAM names it after the logical id, the CDK leaves it to
//     CloudFormation;
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
		case "AWS::Lambda::Permission":
			props["FunctionName"] = refTo(firstRef(props["FunctionName"]))
			if api := firstRef(props["SourceArn"]); api != nil {
				props["SourceArn"] = Ref{ID: api.ID}
			}
		case "AWS::Scheduler::Schedule":
			delete(props, "Name")
		}
	}
	mergePolicies(r)
	normalizeAPIs(r)
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
// and condition, without duplicates.
func permissions(stmts []any) []any {
	seen := map[string]bool{}
	var out []any
	for _, s := range stmts {
		st := asMap(s)
		for _, action := range asList(st["Action"]) {
			targets := asList(st["Resource"])
			key := "Resource"
			if len(targets) == 0 {
				key = "Principal"
				for kind, v := range asMap(st["Principal"]) {
					for _, p := range asList(v) {
						targets = append(targets, kind+":"+fmt.Sprint(p))
					}
				}
			}
			for _, t := range targets {
				e := map[string]any{"Effect": st["Effect"], "Action": action, key: t}
				if c, ok := st["Condition"]; ok {
					e["Condition"] = c
				}
				k := canonical(e)
				if !seen[k] {
					seen[k] = true
					out = append(out, e)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return canonical(out[i]) < canonical(out[j]) })
	return out
}

// normalizeAPIs gives both spellings of an HTTP API the same resources: the API (protocol
// only), and one Route per route with its authorizer and integration.
func normalizeAPIs(r *Resolved) {
	for id, res := range r.Resources {
		if res.Type != "AWS::ApiGatewayV2::Api" {
			continue
		}
		props := asMap(res.Body["Properties"])
		if body := asMap(props["Body"]); body != nil {
			routesFromOpenAPI(r, id, body)
			props = map[string]any{"ProtocolType": "HTTP"}
		} else {
			props = map[string]any{"ProtocolType": props["ProtocolType"]}
		}
		res.Body["Properties"] = props
	}
	for _, res := range r.Resources {
		if res.Type != "AWS::ApiGatewayV2::Route" {
			continue
		}
		props := asMap(res.Body["Properties"])
		route := map[string]any{"Api": props["ApiId"], "RouteKey": props["RouteKey"]}
		if ref := firstRef(props["AuthorizerId"]); ref != nil {
			if a, ok := r.Resources[ref.ID]; ok {
				ap := asMap(a.Body["Properties"])
				jwt := asMap(ap["JwtConfiguration"])
				route["Authorizer"] = map[string]any{
					"Type":           strings.ToLower(fmt.Sprint(ap["AuthorizerType"])),
					"IdentitySource": asList(ap["IdentitySource"]),
					"Issuer":         jwt["Issuer"],
					"Audience":       asList(jwt["Audience"]),
				}
				delete(r.Resources, ref.ID)
			}
		}
		if ref := firstRef(props["Target"]); ref != nil {
			if in, ok := r.Resources[ref.ID]; ok {
				ip := asMap(in.Body["Properties"])
				route["Integration"] = map[string]any{
					"Type":                 strings.ToLower(fmt.Sprint(ip["IntegrationType"])),
					"PayloadFormatVersion": ip["PayloadFormatVersion"],
					"Function":             refTo(firstRef(ip["IntegrationUri"])),
				}
				delete(r.Resources, ref.ID)
			}
		}
		res.Type = "Route"
		res.Body["Properties"] = route
	}
}

// routesFromOpenAPI adds a Route for every path and method of an OpenAPI body with its
// x-amazon-apigateway extensions.
func routesFromOpenAPI(r *Resolved, apiID string, body map[string]any) {
	schemes := asMap(asMap(body["components"])["securitySchemes"])
	for path, methods := range asMap(body["paths"]) {
		for method, op := range asMap(methods) {
			opm := asMap(op)
			verb := strings.ToUpper(method)
			if method == "x-amazon-apigateway-any-method" {
				verb = "ANY"
			}
			route := map[string]any{"Api": Ref{ID: apiID}, "RouteKey": verb + " " + path}
			for _, sec := range asList(opm["security"]) {
				for name := range asMap(sec) {
					auth := asMap(asMap(schemes[name])["x-amazon-apigateway-authorizer"])
					jwt := asMap(auth["jwtConfiguration"])
					route["Authorizer"] = map[string]any{
						"Type":           strings.ToLower(fmt.Sprint(auth["type"])),
						"IdentitySource": asList(auth["identitySource"]),
						"Issuer":         jwt["issuer"],
						"Audience":       asList(jwt["audience"]),
					}
				}
			}
			if in := asMap(opm["x-amazon-apigateway-integration"]); in != nil {
				route["Integration"] = map[string]any{
					"Type":                 strings.ToLower(fmt.Sprint(in["type"])),
					"PayloadFormatVersion": in["payloadFormatVersion"],
					"Function":             refTo(firstRef(in["uri"])),
				}
			}
			id := fmt.Sprintf("%s Route %s", apiID, route["RouteKey"])
			r.Resources[id] = &Resource{ID: id, Type: "Route", Body: map[string]any{
				"Properties": route, "DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete",
			}}
		}
	}
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
