// Package samtemplate reads an AWS SAM template (berth's template.yaml) into
// what it deploys, with every intrinsic function resolved: the functions
// (code location, environment, timeout, memory, reserved concurrency), the
// SQS queues and their redrive policies, the DynamoDB tables, the event
// source mappings (stream and queue) with their settings, the schedules and
// the HTTP API routes. The emulator (internal/emulate) plays that stack on
// one machine; the template stays the one source of truth.
//
// YAML, including CloudFormation's short tags (!Ref, !GetAtt, !Sub …), is
// read with github.com/awslabs/goformation/v7; its typed SAM resources lack
// properties berth's template uses (FilterCriteria, ScalingConfig,
// FunctionResponseTypes), so resources are decoded here, after the
// intrinsics are resolved against the parameters and the emulated
// resources' names.
package samtemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/berth-io/berth/internal/cfnintrinsics"
)

// Defaults of Options.
const (
	DefaultStackName = "berth"
	DefaultRegion    = "us-east-1"
	DefaultAccountID = "000000000000"
)

// Options say where the stack is emulated.
type Options struct {
	// StackName is AWS::StackName and the prefix of generated resource
	// names. Defaults to DefaultStackName.
	StackName string
	// Region is AWS::Region. Defaults to DefaultRegion.
	Region string
	// AccountID is AWS::AccountId. Defaults to DefaultAccountID.
	AccountID string
	// Parameters override the template parameters' defaults, as
	// `sam deploy --parameter-overrides` does.
	Parameters map[string]string
	// Attributes give the real value of a resource's Ref ("Ref") or
	// attribute (e.g. "Arn", "QueueUrl", "StreamArn") once the emulator has
	// created it, keyed by logical id. Unset ones are derived from the
	// resource's name, as AWS would form them.
	Attributes map[string]map[string]string
}

func (o *Options) defaults() {
	if o.StackName == "" {
		o.StackName = DefaultStackName
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.AccountID == "" {
		o.AccountID = DefaultAccountID
	}
}

// Resource types the stack model reads.
const (
	TypeFunction           = "AWS::Serverless::Function"
	TypeHTTPAPI            = "AWS::Serverless::HttpApi"
	TypeQueue              = "AWS::SQS::Queue"
	TypeTable              = "AWS::DynamoDB::Table"
	TypeEventSourceMapping = "AWS::Lambda::EventSourceMapping"
	TypeSchedule           = "AWS::Scheduler::Schedule"
	TypeEventsRule         = "AWS::Events::Rule"
	TypeGatewayAPI         = "AWS::ApiGatewayV2::Api"
	TypeGatewayRoute       = "AWS::ApiGatewayV2::Route"
	TypeGatewayIntegration = "AWS::ApiGatewayV2::Integration"
)

// Load reads the template at path. See Parse.
func Load(path string, opts Options) (*Stack, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %w", err)
	}
	st, err := Parse(raw, opts)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %s: %w", path, err)
	}
	return st, nil
}

// goformationMu serializes goformation's YAML reading: intrinsics.ProcessYAML
// registers its short-tag resolvers into a package-level map on every call,
// so two calls at once (two emulated stacks starting side by side) race on
// that map. A lock rather than one parsed template shared per process: the
// call takes milliseconds next to a stack's start, and callers parse
// different templates (tests write their own), so a cache keyed by content
// would add a second rule for no measurable gain.
var goformationMu sync.Mutex

// processYAML turns a YAML template, short tags included, into JSON with
// the intrinsics left in place (resolved later, against Options).
func processYAML(raw []byte) ([]byte, error) {
	goformationMu.Lock()
	defer goformationMu.Unlock()
	js, err := intrinsics.ProcessYAML(raw, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, fmt.Errorf("reading the YAML: %w", err)
	}
	return js, nil
}

// Parse reads a SAM template: the resources whose Condition holds, with
// Globals.Function merged into every function and every intrinsic
// resolved.
func Parse(raw []byte, opts Options) (*Stack, error) {
	opts.defaults()
	js, err := processYAML(raw)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	resources, _ := doc["Resources"].(map[string]any)
	if len(resources) == 0 {
		return nil, errors.New("no Resources")
	}
	p := &parser{doc: doc, opts: opts, resources: map[string]map[string]any{}}
	for id, r := range resources {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("resource %s is not a map", id)
		}
		p.resources[id] = m
	}
	p.ev = &cfnintrinsics.Evaluator{
		Doc: doc,
		Pseudo: map[string]string{
			"AWS::StackName": opts.StackName, "AWS::Region": opts.Region, "AWS::AccountId": opts.AccountID,
			"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
			"AWS::StackId": fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/emulated", opts.Region, opts.AccountID, opts.StackName),
		},
		Ref: p.refResource, GetAtt: p.getAtt,
	}
	if p.ev.Params, p.paramRefs, err = parameters(doc, opts.Parameters); err != nil {
		return nil, err
	}
	return p.stack()
}

// parameters returns every parameter's effective value: the override, else
// the default. A parameter with neither is left out; a Ref to it fails.
func parameters(doc map[string]any, overrides map[string]string) (map[string]any, map[string]bool, error) {
	decl, _ := doc["Parameters"].(map[string]any)
	for name := range overrides {
		if _, ok := decl[name]; !ok {
			return nil, nil, fmt.Errorf("parameter override %s: the template has no such parameter", name)
		}
	}
	out := map[string]any{}
	known := map[string]bool{}
	for name, d := range decl {
		known[name] = true
		m, _ := d.(map[string]any)
		var v any
		if o, ok := overrides[name]; ok {
			v = o
		} else if dv, ok := m["Default"]; ok {
			v = scalar(dv)
		} else {
			continue
		}
		typ, _ := m["Type"].(string)
		if strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
			var list []any
			if s := scalar(v); s != "" {
				for _, e := range strings.Split(s, ",") {
					list = append(list, strings.TrimSpace(e))
				}
			}
			v = list
		}
		if allowed, ok := m["AllowedValues"].([]any); ok {
			if _, isList := v.([]any); !isList && !slices.ContainsFunc(allowed, func(a any) bool { return scalar(a) == scalar(v) }) {
				return nil, nil, fmt.Errorf("parameter %s=%q is not one of its AllowedValues %v", name, scalar(v), allowed)
			}
		}
		if pat, ok := m["AllowedPattern"].(string); ok {
			re, err := regexp.Compile("^(?:" + pat + ")$")
			if err == nil && !re.MatchString(scalar(v)) {
				return nil, nil, fmt.Errorf("parameter %s=%q does not match its AllowedPattern %s", name, scalar(v), pat)
			}
		}
		out[name] = v
	}
	return out, known, nil
}

// parser holds one Parse.
type parser struct {
	doc       map[string]any
	opts      Options
	resources map[string]map[string]any
	ev        *cfnintrinsics.Evaluator
	paramRefs map[string]bool // declared parameters
	// names caches each resource's physical name (resolving it may need
	// other resources' names).
	names  map[string]string
	naming map[string]bool
}

// typeOf returns a resource's Type.
func (p *parser) typeOf(id string) string {
	t, _ := p.resources[id]["Type"].(string)
	return t
}

// exists reports whether the resource is in the template and its
// Condition (if any) holds.
func (p *parser) exists(id string) (bool, error) {
	r, ok := p.resources[id]
	if !ok {
		return false, nil
	}
	c, ok := r["Condition"].(string)
	if !ok {
		return true, nil
	}
	return p.ev.Condition(c)
}

// nameProperty is the property that names a resource of each type, when
// the template gives one.
var nameProperty = map[string]string{
	TypeQueue: "QueueName", TypeTable: "TableName", TypeFunction: "FunctionName",
	"AWS::SNS::Topic": "TopicName", TypeSchedule: "Name", TypeEventsRule: "Name",
}

// name returns a resource's physical name: its name property, or
// "<stack>-<logical id>" as CloudFormation would generate one (without
// CloudFormation's random suffix, so names are stable between runs).
func (p *parser) name(id string) (string, error) {
	if n, ok := p.names[id]; ok {
		return n, nil
	}
	if p.names == nil {
		p.names, p.naming = map[string]string{}, map[string]bool{}
	}
	if p.naming[id] {
		return "", fmt.Errorf("the name of %s refers to itself", id)
	}
	p.naming[id] = true
	defer delete(p.naming, id)
	n := p.opts.StackName + "-" + id
	if prop, ok := nameProperty[p.typeOf(id)]; ok {
		props, _ := p.resources[id]["Properties"].(map[string]any)
		if raw, ok := props[prop]; ok {
			v, err := p.ev.Eval(raw)
			if err != nil {
				return "", fmt.Errorf("%s.%s: %w", id, prop, err)
			}
			if s := scalar(v); s != "" {
				n = s
			}
		}
	}
	if p.typeOf(id) == TypeQueue && !strings.HasSuffix(n, ".fifo") {
		props, _ := p.resources[id]["Properties"].(map[string]any)
		if fifo, _ := p.ev.Eval(props["FifoQueue"]); scalar(fifo) == "true" {
			n += ".fifo"
		}
	}
	p.names[id] = n
	return n, nil
}

func (p *parser) attribute(id, attr string) (string, bool) {
	v, ok := p.opts.Attributes[id][attr]
	return v, ok
}

// ref resolves a Ref to a resource: a queue's URL, a function's or table's
// name, else the resource's name.
func (p *parser) ref(id string) (any, error) {
	if _, ok := p.resources[id]; !ok {
		return nil, fmt.Errorf("Ref to %s: no such parameter or resource", id)
	}
	if v, ok := p.attribute(id, "Ref"); ok {
		return v, nil
	}
	n, err := p.name(id)
	if err != nil {
		return nil, err
	}
	if p.typeOf(id) == TypeQueue {
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", p.opts.Region, p.opts.AccountID, n), nil
	}
	return n, nil
}

// getAtt resolves Fn::GetAtt. ARNs are formed as AWS forms them; an
// attribute the emulator does not model resolves to a placeholder that
// names it.
func (p *parser) getAtt(id, attr string) (any, error) {
	if _, ok := p.resources[id]; !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	if v, ok := p.attribute(id, attr); ok {
		return v, nil
	}
	n, err := p.name(id)
	if err != nil {
		return nil, err
	}
	region, acct := p.opts.Region, p.opts.AccountID
	switch p.typeOf(id) + "." + attr {
	case TypeQueue + ".Arn":
		return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, acct, n), nil
	case TypeQueue + ".QueueUrl":
		return p.ref(id)
	case TypeQueue + ".QueueName":
		return n, nil
	case TypeTable + ".Arn":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", region, acct, n), nil
	case TypeTable + ".StreamArn":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s/stream/emulated", region, acct, n), nil
	case TypeFunction + ".Arn":
		return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, acct, n), nil
	}
	return fmt.Sprintf("emulated:%s.%s", id, attr), nil
}

// resolved returns a resource's Properties with intrinsics resolved.
func (p *parser) resolved(id string) (map[string]any, error) {
	props, _ := p.resources[id]["Properties"].(map[string]any)
	v, err := p.ev.Eval(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// decode turns resolved properties into a struct through JSON.
func decode(props map[string]any, into any) error {
	b, err := json.Marshal(props)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// sortedIDs returns the logical ids of the resources of type typ that
// exist, sorted.
func (p *parser) sortedIDs(typ string) ([]string, error) {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(p.resources)) {
		if p.typeOf(id) != typ {
			continue
		}
		ok, err := p.exists(id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
