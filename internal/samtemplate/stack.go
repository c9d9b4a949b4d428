package samtemplate

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lambda's defaults where a template leaves a setting out.
const (
	// DefaultTimeout is a function's timeout when neither it nor Globals
	// sets one (3 s, as Lambda).
	DefaultTimeout = 3 * time.Second
	// DefaultMemoryMB is a function's memory when unset.
	DefaultMemoryMB = 128
	// DefaultStreamBatchSize and DefaultQueueBatchSize are the event source
	// mappings' batch sizes when unset.
	DefaultStreamBatchSize = 100
	DefaultQueueBatchSize  = 10
	// DefaultQueueVisibility is an SQS queue's visibility timeout when unset.
	DefaultQueueVisibility = 30 * time.Second
)

// Stack is what a template deploys, as the emulator needs it.
type Stack struct {
	// Parameters are the effective parameter values (override or default).
	Parameters map[string]string
	Functions  map[string]*Function
	Queues     map[string]*Queue
	Tables     map[string]*Table
	Streams    []*StreamMapping
	QueueMaps  []*QueueMapping
	Schedules  []*Schedule
	Routes     []*Route
}

// FunctionIDs returns the functions' logical ids, sorted.
func (s *Stack) FunctionIDs() []string { return slices.Sorted(maps.Keys(s.Functions)) }

// Function is an AWS::Serverless::Function.
type Function struct {
	LogicalID string
	// Name is the function's name (FunctionName or <stack>-<logical id>).
	Name string
	// CodeURI is the code location, relative to the template's directory.
	CodeURI string
	// Metadata is the resource's Metadata (BuildMethod, ContextPath …).
	Metadata    map[string]any
	Runtime     string
	Handler     string
	Timeout     time.Duration
	MemoryMB    int
	Environment map[string]string
	// EnvironmentParameters are the environment variables whose value is
	// a template parameter: a Ref to it, or a Sub of "${Param}" with at most
	// a unit after it ("${Seconds}s").
	EnvironmentParameters map[string]EnvParameter
	// ReservedConcurrency is ReservedConcurrentExecutions; 0: none.
	ReservedConcurrency int
	// Statements are the inline statements of its Policies (conditions
	// applied; policy templates and managed policies are not read).
	Statements []Statement
}

// EnvParameter is the parameter an environment variable is written from,
// and the text after it ("s" for "${Seconds}s").
type EnvParameter struct {
	Name   string
	Suffix string
}

// Queue is an AWS::SQS::Queue.
type Queue struct {
	LogicalID         string
	Name              string
	Fifo              bool
	VisibilityTimeout time.Duration
	// MessageRetention is MessageRetentionPeriod; 0: SQS's default.
	MessageRetention time.Duration
	// DeadLetter is the logical id of the RedrivePolicy's target queue;
	// MaxReceiveCount its maxReceiveCount.
	DeadLetter      string
	MaxReceiveCount int
}

// Table is an AWS::DynamoDB::Table.
type Table struct {
	LogicalID string
	Name      string
	Spec      TableSpec
}

// TableSpec is the part of AWS::DynamoDB::Table's properties that shapes
// the table.
type TableSpec struct {
	AttributeDefinitions []struct {
		AttributeName string
		AttributeType string
	}
	KeySchema               []KeyElement
	GlobalSecondaryIndexes  []Index
	LocalSecondaryIndexes   []Index
	StreamSpecification     *struct{ StreamViewType string }
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       Bool
	}
	BillingMode string
}

// KeyElement is one element of a key schema.
type KeyElement struct {
	AttributeName string
	KeyType       string
}

// Index is a secondary index.
type Index struct {
	IndexName  string
	KeySchema  []KeyElement
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
}

// StreamMapping is a DynamoDB stream → function event source mapping.
type StreamMapping struct {
	// Name is "<function>.<event>" or the mapping's logical id.
	Name     string
	Function string // logical id
	Table    string // logical id of the table whose stream it reads
	Settings MappingSettings
}

// QueueMapping is an SQS queue → function event source mapping.
type QueueMapping struct {
	Name     string
	Function string
	Queue    string // logical id
	Settings MappingSettings
}

// MappingSettings are an event source mapping's settings, with Lambda's
// defaults filled in.
type MappingSettings struct {
	Enabled          bool
	StartingPosition string
	BatchSize        int
	BatchWindow      time.Duration
	// ReportBatchItemFailures: the function's batchItemFailures count.
	ReportBatchItemFailures bool
	// Filters are the FilterCriteria patterns (JSON); a record matching
	// none is dropped.
	Filters []string
	// Stream only.
	Bisect bool
	// MaxRetries is MaximumRetryAttempts; -1: until the record expires.
	MaxRetries int
	// MaxRecordAge is MaximumRecordAgeInSeconds; 0: no limit.
	MaxRecordAge time.Duration
	// OnFailure is the logical id of the on-failure destination queue.
	OnFailure string
	// SQS only: ScalingConfig.MaximumConcurrency (0: none).
	MaxConcurrency int
}

// Schedule invokes a function on a schedule (SAM Schedule/ScheduleV2
// events, AWS::Scheduler::Schedule, AWS::Events::Rule).
type Schedule struct {
	Name       string
	Function   string
	Expression string
	// Input is the event sent; empty: a scheduled event.
	Input   string
	Enabled bool
}

// Route is an HTTP API route to a function (SAM HttpApi event).
type Route struct {
	Name     string
	Function string
	// API is the logical id of the AWS::Serverless::HttpApi; empty: SAM's
	// implicit API.
	API    string
	Method string // ANY, GET …
	Path   string // /{proxy+}, $default …
	// Authorized is false when the route opts out of the API's authorizer
	// (Auth.Authorizer: NONE) or the API has none.
	Authorized bool
	// Timeout is the integration's timeout; 0: API Gateway's 30 s.
	Timeout time.Duration
}

// Int is a number that a template may write as a number or, through a Ref
// to a parameter, as a string.
type Int struct {
	V   int
	Set bool
}

// UnmarshalJSON accepts a number or a numeric string, as CloudFormation does.
func (i *Int) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int(f)) {
		return fmt.Errorf("not an integer: %s", b)
	}
	i.V, i.Set = int(f), true
	return nil
}

// Bool is a boolean that may come as "true"/"false".
type Bool struct {
	V   bool
	Set bool
}

// UnmarshalJSON accepts a boolean or a boolean string, as CloudFormation does.
func (v *Bool) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		return nil
	}
	x, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("not a boolean: %s", b)
	}
	v.V, v.Set = x, true
	return nil
}

// Str is a string that may come as a number (a Ref to a Number parameter).
type Str string

// UnmarshalJSON accepts a string or a scalar, kept as its text.
func (s *Str) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*s = Str(scalar(x))
	return nil
}

// esmProps are the properties of AWS::Lambda::EventSourceMapping and of SAM's
// DynamoDB and SQS events (which use the same names).
type esmProps struct {
	Enabled                        Bool
	StartingPosition               string
	BatchSize                      Int
	MaximumBatchingWindowInSeconds Int
	BisectBatchOnFunctionError     Bool
	MaximumRetryAttempts           Int
	MaximumRecordAgeInSeconds      Int
	FunctionResponseTypes          []string
	FilterCriteria                 *struct {
		Filters []struct{ Pattern Str }
	}
	DestinationConfig *struct {
		OnFailure *struct{ Destination string }
	}
	ScalingConfig *struct{ MaximumConcurrency Int }
	// Sources: SAM's Stream / Queue, or EventSourceArn.
	Stream         string
	Queue          string
	EventSourceArn string
	FunctionName   string
}

func (p *parser) stack() (*Stack, error) {
	s := &Stack{Parameters: map[string]string{}, Functions: map[string]*Function{}, Queues: map[string]*Queue{}, Tables: map[string]*Table{}}
	for k, v := range p.ev.Params {
		s.Parameters[k] = scalar(v)
	}
	arns := map[string]string{} // ARN (and queue URL, function name) → logical id
	for _, typ := range []string{TypeQueue, TypeTable, TypeFunction} {
		ids, err := p.sortedIDs(typ)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			for _, attr := range []string{"Arn", "StreamArn", "QueueUrl"} {
				if v, err := p.getAtt(id, attr); err == nil {
					arns[scalar(v)] = id
				}
			}
			if v, err := p.ref(id); err == nil {
				arns[scalar(v)] = id
			}
		}
	}
	if err := p.queues(s, arns); err != nil {
		return nil, err
	}
	if err := p.tables(s); err != nil {
		return nil, err
	}
	if err := p.functions(s, arns); err != nil {
		return nil, err
	}
	if err := p.standaloneMappings(s, arns); err != nil {
		return nil, err
	}
	return s, nil
}

func seconds(i Int, def time.Duration) time.Duration {
	if !i.Set {
		return def
	}
	return time.Duration(i.V) * time.Second
}

// queueProps is the part of AWS::SQS::Queue's properties the emulator plays.
type queueProps struct {
	FifoQueue              Bool
	VisibilityTimeout      Int
	MessageRetentionPeriod Int
	RedrivePolicy          any
}

func (p *parser) queues(s *Stack, arns map[string]string) error {
	err := eachResource(p, TypeQueue, func(id string, q *queueProps) error {
		name, _ := p.name(id)
		out := &Queue{LogicalID: id, Name: name, Fifo: q.FifoQueue.V,
			VisibilityTimeout: seconds(q.VisibilityTimeout, DefaultQueueVisibility),
			MessageRetention:  seconds(q.MessageRetentionPeriod, 0)}
		if q.RedrivePolicy != nil {
			rp := q.RedrivePolicy
			if str, ok := rp.(string); ok { // the policy may be written as a JSON string
				if err := json.Unmarshal([]byte(str), &rp); err != nil {
					return fmt.Errorf("%s.RedrivePolicy: %w", id, err)
				}
			}
			var pol struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
				MaxReceiveCount     Int    `json:"maxReceiveCount"`
			}
			b, _ := json.Marshal(rp)
			if err := json.Unmarshal(b, &pol); err != nil {
				return fmt.Errorf("%s.RedrivePolicy: %w", id, err)
			}
			out.MaxReceiveCount = pol.MaxReceiveCount.V
			out.DeadLetter = pol.DeadLetterTargetArn // resolved to a logical id below
		}
		s.Queues[id] = out
		return nil
	})
	if err != nil {
		return err
	}
	for id, q := range s.Queues {
		if q.DeadLetter == "" {
			continue
		}
		dlq, ok := arns[q.DeadLetter]
		if !ok || p.typeOf(dlq) != TypeQueue {
			return fmt.Errorf("%s: the dead-letter target %s is not a queue of this template", id, q.DeadLetter)
		}
		if q.MaxReceiveCount < 1 {
			return fmt.Errorf("%s: RedrivePolicy without a maxReceiveCount ≥ 1", id)
		}
		q.DeadLetter = dlq
	}
	return nil
}

func (p *parser) tables(s *Stack) error {
	return eachResource(p, TypeTable, func(id string, spec *TableSpec) error {
		if len(spec.KeySchema) == 0 {
			return fmt.Errorf("%s: no KeySchema", id)
		}
		t := &Table{LogicalID: id, Spec: *spec}
		t.Name, _ = p.name(id)
		s.Tables[id] = t
		return nil
	})
}

// functions reads every function with Globals.Function merged in, and its
// SAM events.
func (p *parser) functions(s *Stack, arns map[string]string) error {
	ids, err := p.sortedIDs(TypeFunction)
	if err != nil {
		return err
	}
	globalsRaw, _ := p.doc["Globals"].(map[string]any)
	gRaw, _ := globalsRaw["Function"].(map[string]any)
	gv, err := p.ev.Eval(gRaw)
	if err != nil {
		return fmt.Errorf("Globals.Function: %w", err)
	}
	globals, _ := gv.(map[string]any)
	for _, id := range ids {
		props, err := p.resolved(id)
		if err != nil {
			return err
		}
		merged := mergeGlobals(globals, props)
		var f struct {
			CodeUri                      any
			Runtime                      string
			Handler                      string
			Timeout                      Int
			MemorySize                   Int
			ReservedConcurrentExecutions Int
			Environment                  struct{ Variables map[string]Str }
			Policies                     []any
			Events                       map[string]struct {
				Type       string
				Properties map[string]any
			}
		}
		if err := decode(merged, &f); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		name, _ := p.name(id)
		meta, _ := p.resources[id]["Metadata"].(map[string]any)
		fn := &Function{
			LogicalID: id, Name: name, Metadata: meta, Runtime: f.Runtime, Handler: f.Handler,
			Timeout: seconds(f.Timeout, DefaultTimeout), MemoryMB: DefaultMemoryMB,
			Environment: map[string]string{}, EnvironmentParameters: p.envParameters(gRaw, id),
			ReservedConcurrency: f.ReservedConcurrentExecutions.V,
		}
		if f.MemorySize.Set {
			fn.MemoryMB = f.MemorySize.V
		}
		if c, ok := f.CodeUri.(string); ok {
			fn.CodeURI = filepath.Clean(c)
		} else if f.CodeUri != nil {
			return fmt.Errorf("%s: CodeUri must be a local directory for the emulator, not %v", id, f.CodeUri)
		}
		for k, v := range f.Environment.Variables {
			fn.Environment[k] = string(v)
		}
		fn.Statements = statements(f.Policies)
		roleStmts, err := p.roleStatements(id)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		fn.Statements = append(fn.Statements, roleStmts...)
		s.Functions[id] = fn
		for _, evName := range slices.Sorted(maps.Keys(f.Events)) {
			ev := f.Events[evName]
			if err := p.event(s, arns, fn, evName, ev.Type, ev.Properties); err != nil {
				return fmt.Errorf("%s.Events.%s: %w", id, evName, err)
			}
		}
	}
	return nil
}

// envParameters finds the environment variables (of Globals.Function or the
// function) written as a Ref to a parameter.
func (p *parser) envParameters(globals map[string]any, id string) map[string]EnvParameter {
	out := map[string]EnvParameter{}
	collect := func(fn map[string]any) {
		env, _ := fn["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			delete(out, k)
			m, ok := v.(map[string]any)
			if !ok || len(m) != 1 {
				continue
			}
			if name, ok := m["Ref"].(string); ok && p.paramRefs[name] {
				out[k] = EnvParameter{Name: name}
			}
			if sub, ok := m["Fn::Sub"].(string); ok {
				if g := subParam.FindStringSubmatch(sub); g != nil && p.paramRefs[g[1]] {
					out[k] = EnvParameter{Name: g[1], Suffix: g[2]}
				}
			}
		}
	}
	collect(globals)
	props, _ := p.resources[id]["Properties"].(map[string]any)
	collect(props)
	return out
}

// subParam is a Sub of one parameter and an optional unit: "${P}", "${P}s".
var subParam = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\}([a-z]{0,2})$`)

// mergeGlobals applies SAM's Globals rules: the function's value wins;
// maps (Environment.Variables, Tags) are merged key by key.
func mergeGlobals(globals, props map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range globals {
		out[k] = v
	}
	for k, v := range props {
		gm, gok := out[k].(map[string]any)
		pm, pok := v.(map[string]any)
		if gok && pok {
			out[k] = mergeGlobals(gm, pm)
			continue
		}
		out[k] = v
	}
	return out
}

func (p *parser) lookup(arns map[string]string, ref, what string) (string, error) {
	id, ok := arns[ref]
	if !ok {
		return "", fmt.Errorf("%s %q is not a resource of this template", what, ref)
	}
	return id, nil
}

func settings(e esmProps, stream bool) MappingSettings {
	st := MappingSettings{
		Enabled: !e.Enabled.Set || e.Enabled.V, StartingPosition: e.StartingPosition,
		BatchWindow: seconds(e.MaximumBatchingWindowInSeconds, 0),
		Bisect:      e.BisectBatchOnFunctionError.V, MaxRetries: -1,
		MaxRecordAge: seconds(e.MaximumRecordAgeInSeconds, 0),
	}
	st.BatchSize = DefaultQueueBatchSize
	if stream {
		st.BatchSize = DefaultStreamBatchSize
	}
	if e.BatchSize.Set {
		st.BatchSize = e.BatchSize.V
	}
	if e.MaximumRetryAttempts.Set {
		st.MaxRetries = e.MaximumRetryAttempts.V
	}
	if e.MaximumRecordAgeInSeconds.V == -1 {
		st.MaxRecordAge = 0
	}
	st.ReportBatchItemFailures = slices.Contains(e.FunctionResponseTypes, "ReportBatchItemFailures")
	if e.FilterCriteria != nil {
		for _, f := range e.FilterCriteria.Filters {
			st.Filters = append(st.Filters, string(f.Pattern))
		}
	}
	if e.ScalingConfig != nil {
		st.MaxConcurrency = e.ScalingConfig.MaximumConcurrency.V
	}
	return st
}

// mapping adds a stream or queue mapping from source to fn.
func (p *parser) mapping(s *Stack, arns map[string]string, name, fn, source string, e esmProps) error {
	src, err := p.lookup(arns, source, "event source")
	if err != nil {
		return err
	}
	switch p.typeOf(src) {
	case TypeTable:
		st := settings(e, true)
		if e.DestinationConfig != nil && e.DestinationConfig.OnFailure != nil && e.DestinationConfig.OnFailure.Destination != "" {
			dst, err := p.lookup(arns, e.DestinationConfig.OnFailure.Destination, "on-failure destination")
			if err != nil {
				return err
			}
			if p.typeOf(dst) != TypeQueue {
				return fmt.Errorf("on-failure destination %s: only SQS queues are emulated", dst)
			}
			st.OnFailure = dst
		}
		if s.Tables[src].Spec.StreamSpecification == nil {
			return fmt.Errorf("table %s has no stream", src)
		}
		s.Streams = append(s.Streams, &StreamMapping{Name: name, Function: fn, Table: src, Settings: st})
	case TypeQueue:
		s.QueueMaps = append(s.QueueMaps, &QueueMapping{Name: name, Function: fn, Queue: src, Settings: settings(e, false)})
	default:
		return fmt.Errorf("event source %s (%s) is not emulated", src, p.typeOf(src))
	}
	return nil
}

// event reads one SAM event of a function.
func (p *parser) event(s *Stack, arns map[string]string, fn *Function, evName, typ string, props map[string]any) error {
	name := fn.LogicalID + "." + evName
	switch typ {
	case "DynamoDB", "SQS":
		var e esmProps
		if err := decode(props, &e); err != nil {
			return err
		}
		src := e.Stream
		if typ == "SQS" {
			src = e.Queue
		}
		return p.mapping(s, arns, name, fn.LogicalID, src, e)
	case "Schedule", "ScheduleV2":
		var e struct {
			Schedule           string
			ScheduleExpression string
			Input              string
			Enabled            Bool
			State              string
		}
		if err := decode(props, &e); err != nil {
			return err
		}
		expr := e.Schedule
		if typ == "ScheduleV2" {
			expr = e.ScheduleExpression
		}
		enabled := (!e.Enabled.Set || e.Enabled.V) && e.State != "DISABLED"
		s.Schedules = append(s.Schedules, &Schedule{Name: name, Function: fn.LogicalID, Expression: expr, Input: e.Input, Enabled: enabled})
	case "HttpApi":
		var e struct {
			ApiId  string
			Method string
			Path   string
			Auth   *struct{ Authorizer string }
		}
		if err := decode(props, &e); err != nil {
			return err
		}
		r := &Route{Name: name, Function: fn.LogicalID, Method: strings.ToUpper(e.Method), Path: e.Path}
		if e.ApiId != "" {
			id, ok := arns[e.ApiId]
			if !ok {
				id = e.ApiId // Ref to the HttpApi resolves to its name, which is its logical id's
				for rid := range p.resources {
					if n, _ := p.ref(rid); scalar(n) == e.ApiId {
						id = rid
					}
				}
			}
			r.API = id
		}
		if r.Method == "" {
			r.Method = "ANY"
		}
		if r.Path == "" {
			r.Path = "$default"
		}
		authorized, err := p.apiHasAuthorizer(r.API)
		if err != nil {
			return err
		}
		r.Authorized = authorized && (e.Auth == nil || !strings.EqualFold(e.Auth.Authorizer, "NONE"))
		s.Routes = append(s.Routes, r)
	default:
		return fmt.Errorf("event type %s is not emulated", typ)
	}
	return nil
}

// apiHasAuthorizer reports whether an HttpApi has a default authorizer.
func (p *parser) apiHasAuthorizer(api string) (bool, error) {
	if api == "" {
		return false, nil
	}
	if p.typeOf(api) != TypeHTTPAPI {
		return false, fmt.Errorf("ApiId %s is not an %s", api, TypeHTTPAPI)
	}
	props, err := p.resolved(api)
	if err != nil {
		return false, err
	}
	auth, _ := props["Auth"].(map[string]any)
	def, _ := auth["DefaultAuthorizer"].(string)
	return def != "" && !strings.EqualFold(def, "NONE"), nil
}

// standaloneMappings reads AWS::Lambda::EventSourceMapping,
// AWS::Scheduler::Schedule and AWS::Events::Rule resources that target the
// template's functions.
func (p *parser) standaloneMappings(s *Stack, arns map[string]string) error {
	err := eachResource(p, TypeEventSourceMapping, func(id string, e *esmProps) error {
		fn, err := p.lookup(arns, e.FunctionName, "FunctionName")
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		if err := p.mapping(s, arns, id, fn, e.EventSourceArn, *e); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := p.gatewayRoutes(s, arns); err != nil {
		return err
	}
	for _, typ := range []string{TypeSchedule, TypeEventsRule} {
		if err := eachResource(p, typ, func(id string, e *scheduleProps) error {
			p.schedule(s, arns, id, e)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// scheduleProps is the part of AWS::Scheduler::Schedule's and
// AWS::Events::Rule's properties the emulator plays (the first has Target,
// the second Targets).
type scheduleProps struct {
	ScheduleExpression string
	State              string
	Target             *struct{ Arn, Input string }
	Targets            []struct{ Arn, Input string }
}

// schedule adds one Schedule for each of e's targets that is a function of
// this template; a rule that only matches events is no schedule.
func (p *parser) schedule(s *Stack, arns map[string]string, id string, e *scheduleProps) {
	targets := e.Targets
	if e.Target != nil {
		targets = append(targets, *e.Target)
	}
	for _, t := range targets {
		fn, ok := arns[t.Arn]
		if !ok || p.typeOf(fn) != TypeFunction || e.ScheduleExpression == "" {
			continue // not a schedule of one of these functions
		}
		s.Schedules = append(s.Schedules, &Schedule{Name: id, Function: fn, Expression: e.ScheduleExpression,
			Input: t.Input, Enabled: e.State != "DISABLED"})
	}
}

// gatewayRoutes reads AWS::ApiGatewayV2::Route resources whose target is an
// AWS_PROXY integration of one of the template's functions.
func (p *parser) gatewayRoutes(s *Stack, arns map[string]string) error {
	integrations, err := p.sortedIDs(TypeGatewayIntegration)
	if err != nil {
		return err
	}
	return eachResource(p, TypeGatewayRoute, func(id string, r *routeProps) error {
		target := strings.TrimPrefix(r.Target, "integrations/")
		var integ string
		for _, iid := range integrations {
			if ref, _ := p.ref(iid); scalar(ref) == target {
				integ = iid
			}
		}
		if integ == "" {
			return fmt.Errorf("%s: target %q is not an integration of this template", id, r.Target)
		}
		var in integrationProps
		if err := p.decodeResolved(integ, &in); err != nil {
			return err
		}
		fn := ""
		for arn, rid := range arns {
			if p.typeOf(rid) == TypeFunction && strings.HasPrefix(arn, "arn:") && strings.Contains(in.IntegrationUri, arn) {
				fn = rid
			}
		}
		if fn == "" || !strings.EqualFold(in.IntegrationType, "AWS_PROXY") {
			return fmt.Errorf("%s: integration %s is not an AWS_PROXY integration of a function of this template", id, integ)
		}
		route := &Route{Name: id, Function: fn, Method: "ANY", Path: "$default",
			Authorized: r.AuthorizationType != "" && !strings.EqualFold(r.AuthorizationType, "NONE")}
		for aid := range p.resources {
			if ref, _ := p.ref(aid); scalar(ref) == r.ApiId && p.typeOf(aid) == TypeGatewayAPI {
				route.API = aid
			}
		}
		if r.RouteKey != "$default" {
			m, path, ok := strings.Cut(r.RouteKey, " ")
			if !ok {
				return fmt.Errorf("%s: RouteKey %q", id, r.RouteKey)
			}
			route.Method, route.Path = strings.ToUpper(m), path
		}
		if in.TimeoutInMillis.Set {
			route.Timeout = time.Duration(in.TimeoutInMillis.V) * time.Millisecond
		}
		s.Routes = append(s.Routes, route)
		return nil
	})
}

// routeProps and integrationProps are the parts of AWS::ApiGatewayV2::Route's
// and ::Integration's properties the emulator plays.
type (
	routeProps struct {
		ApiId             string
		RouteKey          string
		AuthorizationType string
		Target            string
	}
	integrationProps struct {
		IntegrationType string
		IntegrationUri  string
		TimeoutInMillis Int
	}
)

// eachResource decodes the resolved properties of every resource of type typ,
// in logical-id order, into a new T and hands them to fn, stopping at the
// first error.
func eachResource[T any](p *parser, typ string, fn func(id string, props *T) error) error {
	ids, err := p.sortedIDs(typ)
	if err != nil {
		return err
	}
	for _, id := range ids {
		v := new(T)
		if err := p.decodeResolved(id, v); err != nil {
			return err
		}
		if err := fn(id, v); err != nil {
			return err
		}
	}
	return nil
}

// decodeResolved evaluates resource id's properties and decodes them into
// into; a decoding error names the resource.
func (p *parser) decodeResolved(id string, into any) error {
	props, err := p.resolved(id)
	if err != nil {
		return err
	}
	if err := decode(props, into); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	return nil
}
