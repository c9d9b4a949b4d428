package berth_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/metrics"
	"github.com/berth-io/berth/internal/outbox"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/wiring"
	"github.com/berth-io/berth/internal/worker"
)

// cfnTemplate is template.yaml as plain JSON with its intrinsic functions
// kept ({"Ref": …}, {"Fn::Sub": …}), so that the checks can tell which
// parameter a value comes from, and resolve it at the parameters' defaults.
type cfnTemplate struct {
	t   *testing.T
	doc map[string]any
}

func loadTemplate(t *testing.T) *cfnTemplate {
	t.Helper()
	data, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The Go tooling of later tasks (the emulator, the CDK app) reads this
	// file with goformation: it must parse there, typed, as it is.
	if _, err := goformation.ParseYAML(data); err != nil {
		t.Fatalf("goformation cannot parse template.yaml: %v", err)
	}
	raw, err := intrinsics.ProcessYAML(data, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return &cfnTemplate{t: t, doc: doc}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// getAtt returns the resource and attribute of a Fn::GetAtt, in either of
// its forms ("Res.Attr" or [Res, Attr]); nil for anything else.
func getAtt(v any) []string {
	switch a := asMap(v)["Fn::GetAtt"].(type) {
	case string:
		res, attr, ok := strings.Cut(a, ".")
		if ok {
			return []string{res, attr}
		}
	case []any:
		if len(a) == 2 {
			return []string{scalar(a[0]), scalar(a[1])}
		}
	}
	return nil
}
func asList(v any) []any { l, _ := v.([]any); return l }

// resource returns a resource's Properties, failing when it is absent or of
// another type.
func (c *cfnTemplate) resource(name, typ string) map[string]any {
	c.t.Helper()
	r := asMap(asMap(c.doc["Resources"])[name])
	if r == nil || r["Type"] != typ {
		c.t.Fatalf("resource %s: want a %s, got %v", name, typ, r["Type"])
	}
	return defaultProperties(r)
}

// defaultProperties are a resource's properties; where a condition chooses
// the whole block (UserPool), the block goformation reads: the one of the
// parameters' defaults, the second (TestTemplateUserPoolThreatProtection
// holds that).
func defaultProperties(r map[string]any) map[string]any {
	props := asMap(r["Properties"])
	if branches, ok := props["Fn::If"].([]any); ok && len(branches) == 3 {
		return asMap(branches[2])
	}
	return props
}

// functionPolicies are a function's inline policies as its Policies
// property lists them ({Statement: …}, or !If [condition, {Statement: …},
// AWS::NoValue]), whether SAM makes its role or the template writes the
// role out (Role: !GetAtt <role>.Arn, whose PolicyDocuments they are).
func (c *cfnTemplate) functionPolicies(logicalID string) []any {
	c.t.Helper()
	fn := c.resource(logicalID, "AWS::Serverless::Function")
	role := getAtt(fn["Role"])
	if role == nil {
		return asList(fn["Policies"])
	}
	if fn["Policies"] != nil {
		c.t.Errorf("%s: both Role and Policies", logicalID)
	}
	var out []any
	for _, p := range asList(c.resource(role[0], "AWS::IAM::Role")["Policies"]) {
		p := asMap(p)
		if ifs := asList(p["Fn::If"]); len(ifs) == 3 {
			out = append(out, map[string]any{"Fn::If": []any{ifs[0], asMap(ifs[1])["PolicyDocument"], ifs[2]}})
			continue
		}
		out = append(out, p["PolicyDocument"])
	}
	return out
}

func (c *cfnTemplate) resourcesOf(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, r := range asMap(c.doc["Resources"]) {
		if asMap(r)["Type"] == typ {
			out[name] = defaultProperties(asMap(r))
		}
	}
	return out
}

func (c *cfnTemplate) param(name string) map[string]any {
	c.t.Helper()
	p := asMap(asMap(c.doc["Parameters"])[name])
	if p == nil {
		c.t.Fatalf("no parameter %s", name)
	}
	return p
}

// scalar prints a JSON scalar as CloudFormation would pass it on.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// noValue marks AWS::NoValue.
const noValue = "\x00novalue"

// resolve evaluates v at the parameters' defaults. A resource's Ref or
// GetAtt resolves to a plausible value of its kind (a queue URL for a
// queue), enough for the configuration to validate.
func (c *cfnTemplate) resolve(v any) string {
	c.t.Helper()
	m := asMap(v)
	if m == nil {
		return scalar(v)
	}
	for fn, arg := range m {
		switch fn {
		case "Ref":
			name := arg.(string)
			switch name {
			case "AWS::NoValue":
				return noValue
			case "AWS::StackName":
				return "berth-test"
			case "AWS::Region":
				return "eu-west-1"
			}
			if p := asMap(asMap(c.doc["Parameters"])[name]); p != nil {
				return scalar(p["Default"])
			}
			r := asMap(asMap(c.doc["Resources"])[name])
			if r == nil {
				c.t.Fatalf("Ref to unknown %s", name)
			}
			if r["Type"] == "AWS::SQS::Queue" {
				return "https://sqs.eu-west-1.amazonaws.com/123456789012/" + name
			}
			return name
		case "Fn::Sub":
			s, ok := arg.(string)
			if !ok {
				c.t.Fatalf("Fn::Sub with variables: %v", arg)
			}
			for {
				i := strings.Index(s, "${")
				if i < 0 {
					return s
				}
				j := strings.Index(s[i:], "}")
				s = s[:i] + c.resolve(map[string]any{"Ref": s[i+2 : i+j]}) + s[i+j+1:]
			}
		case "Fn::If":
			l := asList(arg)
			if c.condition(l[0].(string)) {
				return c.resolve(l[1])
			}
			return c.resolve(l[2])
		case "Fn::FindInMap":
			l := asList(arg)
			return scalar(asMap(asMap(asMap(c.doc["Mappings"])[l[0].(string)])[c.resolve(l[1])])[c.resolve(l[2])])
		}
	}
	c.t.Fatalf("cannot resolve %v", v)
	return ""
}

// condition evaluates a condition at the parameters' defaults.
func (c *cfnTemplate) condition(name string) bool {
	c.t.Helper()
	return c.evalCond(asMap(c.doc["Conditions"])[name])
}

func (c *cfnTemplate) evalCond(v any) bool {
	c.t.Helper()
	if name, ok := v.(string); ok { // !Condition name, as goformation reads it
		return c.condition(name)
	}
	m := asMap(v)
	switch {
	case m["Fn::Equals"] != nil:
		l := asList(m["Fn::Equals"])
		return c.condValue(l[0]) == c.condValue(l[1])
	case m["Fn::Not"] != nil:
		return !c.evalCond(asList(m["Fn::Not"])[0])
	case m["Condition"] != nil:
		return c.condition(m["Condition"].(string))
	case m["Fn::And"] != nil:
		for _, x := range asList(m["Fn::And"]) {
			if !c.evalCond(x) {
				return false
			}
		}
		return true
	}
	c.t.Fatalf("cannot evaluate condition %v", v)
	return false
}

func (c *cfnTemplate) condValue(v any) string {
	if j := asList(asMap(v)["Fn::Join"]); j != nil {
		return c.resolve(j[1]) // a list parameter's default, already joined by commas
	}
	return c.resolve(v)
}

// paramOf returns the parameter a value is made of: {"Ref": P} or a Sub of
// "${P}" with at most a unit after it. "" for anything else.
func paramOf(v any) string {
	m := asMap(v)
	if p, ok := m["Ref"].(string); ok {
		return p
	}
	if s, ok := m["Fn::Sub"].(string); ok && strings.HasPrefix(s, "${") {
		if i := strings.Index(s, "}"); i > 0 && len(s)-i <= 2 {
			return s[2:i]
		}
	}
	return ""
}

// function is one of the template's functions and what its code is.
type function struct {
	logicalID string
	dir       string // functions/<dir>
	kind      string // what wiring.LoadConfig is told
	withSQS   bool   // whether the function cannot run without both queues
	secret    bool   // whether it may read the runtime configuration secret
}

var functions = []function{
	{"ApiFunction", "api", "api", false, false},
	{"DispatcherFunction", "dispatcher", "dispatcher", true, false},
	{"CreateWorkerFunction", "worker", "worker", true, true},
	{"LifecycleWorkerFunction", "worker", "worker", true, true},
	{"ReconcilerFunction", "reconciler", "reconciler", false, true},
	{"WatcherFunction", "watcher", "watcher", false, true},
	{"LogsFunction", "logs", "logs", false, true},
	{"NotifyFunction", "notify", "notify", false, false},
	{"ExecFunction", "exec", "exec", false, true},
}

// env is a function's environment as written: the Globals' and its own.
func (c *cfnTemplate) env(logicalID string) map[string]any {
	out := map[string]any{}
	global := asMap(asMap(asMap(asMap(c.doc["Globals"])["Function"])["Environment"])["Variables"])
	own := asMap(asMap(c.resource(logicalID, "AWS::Serverless::Function")["Environment"])["Variables"])
	for _, vars := range []map[string]any{global, own} {
		for k, v := range vars {
			out[k] = v
		}
	}
	return out
}

// TestTemplateFunctions: nine functions, each built by its make target from
// its functions/ directory for provided.al2023 on arm64.
func TestTemplateFunctions(t *testing.T) {
	c := loadTemplate(t)
	fns := c.resourcesOf("AWS::Serverless::Function")
	if len(fns) != len(functions) {
		t.Errorf("%d functions in the template, want %d", len(fns), len(functions))
	}
	g := asMap(asMap(c.doc["Globals"])["Function"])
	if g["Runtime"] != "provided.al2023" || !reflect.DeepEqual(g["Architectures"], []any{"arm64"}) || g["Handler"] != "bootstrap" {
		t.Errorf("Globals.Function: %v %v %v; want provided.al2023, [arm64], bootstrap", g["Runtime"], g["Architectures"], g["Handler"])
	}
	for _, f := range functions {
		c.resource(f.logicalID, "AWS::Serverless::Function")
		r := asMap(asMap(c.doc["Resources"])[f.logicalID])
		if asMap(r["Metadata"])["BuildMethod"] != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod %v, want makefile", f.logicalID, asMap(r["Metadata"])["BuildMethod"])
		}
		if _, err := os.Stat(filepath.Join("functions", f.dir, "main.go")); err != nil {
			t.Errorf("%s: %v", f.logicalID, err)
		}
		out, err := exec.Command("make", "-n", "build-"+f.logicalID, "ARTIFACTS_DIR=/artifacts/"+f.logicalID).CombinedOutput()
		if err != nil {
			t.Errorf("make -n build-%s: %v\n%s", f.logicalID, err, out)
			continue
		}
		for _, want := range []string{"GOARCH=arm64", "lambda.norpc", `-o "/artifacts/` + f.logicalID + `/bootstrap"`, "./functions/" + f.dir + "\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("make build-%s does not say %q:\n%s", f.logicalID, want, out)
			}
		}
	}
}

// TestTemplateTables: the six tables exactly as dynamostore.Tables defines
// them, with the outbox stream the dispatcher decodes.
func TestTemplateTables(t *testing.T) {
	c := loadTemplate(t)
	prefix := c.resolve(map[string]any{"Ref": "TablePrefix"})
	if prefix != config.Default().Store.TablePrefix {
		t.Errorf("TablePrefix defaults to %q, the configuration to %q", prefix, config.Default().Store.TablePrefix)
	}
	byName := map[string]map[string]any{}
	for name, p := range c.resourcesOf("AWS::DynamoDB::Table") {
		tn := c.resolve(p["TableName"])
		if sub, _ := asMap(p["TableName"])["Fn::Sub"].(string); !strings.HasPrefix(sub, "${TablePrefix}") {
			t.Errorf("%s: TableName %v is not ${TablePrefix}<name>", name, p["TableName"])
		}
		byName[tn] = p
		if p["BillingMode"] != "PAY_PER_REQUEST" || asMap(p["PointInTimeRecoverySpecification"])["PointInTimeRecoveryEnabled"] != true ||
			paramOf(p["DeletionProtectionEnabled"]) != "DeletionProtection" {
			t.Errorf("%s: want PAY_PER_REQUEST, point-in-time recovery and DeletionProtectionEnabled from DeletionProtection", name)
		}
	}
	defs := dynamostore.Tables(prefix)
	if len(byName) != len(defs) {
		t.Errorf("%d tables in the template, dynamostore has %d", len(byName), len(defs))
	}
	keys := func(l any) []string {
		var out []string
		for _, k := range asList(l) {
			out = append(out, fmt.Sprint(asMap(k)["AttributeName"], ":", asMap(k)["KeyType"]))
		}
		return out
	}
	for _, def := range defs {
		in := def.Create
		name := aws.ToString(in.TableName)
		p := byName[name]
		if p == nil {
			t.Errorf("table %s is not in the template", name)
			continue
		}
		var wantAttrs, gotAttrs []string
		for _, a := range in.AttributeDefinitions {
			wantAttrs = append(wantAttrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
		}
		for _, a := range asList(p["AttributeDefinitions"]) {
			gotAttrs = append(gotAttrs, fmt.Sprint(asMap(a)["AttributeName"], ":", asMap(a)["AttributeType"]))
		}
		slices.Sort(wantAttrs)
		slices.Sort(gotAttrs)
		if !slices.Equal(wantAttrs, gotAttrs) {
			t.Errorf("%s: attributes %v, want %v", name, gotAttrs, wantAttrs)
		}
		var wantKeys []string
		for _, k := range in.KeySchema {
			wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		if got := keys(p["KeySchema"]); !slices.Equal(got, wantKeys) {
			t.Errorf("%s: key %v, want %v", name, got, wantKeys)
		}
		gotGSI := map[string]string{}
		for _, g := range asList(p["GlobalSecondaryIndexes"]) {
			gotGSI[fmt.Sprint(asMap(g)["IndexName"])] = fmt.Sprint(keys(asMap(g)["KeySchema"]), asMap(asMap(g)["Projection"])["ProjectionType"])
		}
		wantGSI := map[string]string{}
		for _, g := range in.GlobalSecondaryIndexes {
			var ks []string
			for _, k := range g.KeySchema {
				ks = append(ks, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
			}
			wantGSI[aws.ToString(g.IndexName)] = fmt.Sprint(ks, g.Projection.ProjectionType)
		}
		if !reflect.DeepEqual(gotGSI, wantGSI) {
			t.Errorf("%s: indexes %v, want %v", name, gotGSI, wantGSI)
		}
		wantStream := ""
		if in.StreamSpecification != nil && aws.ToBool(in.StreamSpecification.StreamEnabled) {
			wantStream = string(in.StreamSpecification.StreamViewType)
		}
		if got := scalar(asMap(p["StreamSpecification"])["StreamViewType"]); (p["StreamSpecification"] == nil && wantStream != "") || (p["StreamSpecification"] != nil && got != wantStream) {
			t.Errorf("%s: stream %v, want %q", name, p["StreamSpecification"], wantStream)
		}
		ttl := asMap(p["TimeToLiveSpecification"])
		if def.TTLAttribute == "" && ttl != nil || def.TTLAttribute != "" && (ttl["AttributeName"] != def.TTLAttribute || ttl["Enabled"] != true) {
			t.Errorf("%s: TTL %v, want %q", name, ttl, def.TTLAttribute)
		}
	}
}

// TestTemplateEnvironment: every BERTH_ variable a function is given is one
// the configuration reads; each function's environment, at the parameters'
// defaults, loads through the function's own configuration loader; and the
// defaults are the configuration's own.
func TestTemplateEnvironment(t *testing.T) {
	c := loadTemplate(t)
	known := append(config.EnvKeys(), wiring.ConfigFileVar, wiring.ConfigSecretVar, wiring.ConfigParameterVar)
	def := config.Default()
	for _, f := range functions {
		vars := c.env(f.logicalID)
		env := map[string]string{}
		for k, v := range vars {
			if !slices.Contains(known, k) {
				t.Errorf("%s: %s is not a variable berth reads", f.logicalID, k)
			}
			if val := c.resolve(v); val != noValue {
				env[k] = val
			}
		}
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		cfg, err := wiring.LoadConfig(f.kind, lookup, f.withSQS)
		if err != nil {
			t.Errorf("%s: its environment does not load: %v", f.logicalID, err)
			continue
		}
		if !reflect.DeepEqual(cfg.Container, def.Container) {
			t.Errorf("%s: container settings at the template's defaults\n %+v\nwant the configuration's defaults\n %+v", f.logicalID, cfg.Container, def.Container)
		}
		if cfg.Store.TablePrefix != def.Store.TablePrefix || cfg.Auth.AdminClaim != def.Auth.AdminClaim || cfg.Auth.AdminGroup != def.Auth.AdminGroup {
			t.Errorf("%s: store/auth %+v %+v differ from the defaults", f.logicalID, cfg.Store, cfg.Auth)
		}
		_, hasSecret := vars[wiring.ConfigSecretVar]
		if hasSecret != f.secret {
			t.Errorf("%s: %s given = %v, want %v (only workers and the reconciler read runtime secrets)", f.logicalID, wiring.ConfigSecretVar, hasSecret, f.secret)
		}
		// The watcher only records what the runtimes report: no queue. The
		// notify function knows its own queue only.
		if f.kind == wiring.FunctionNotify {
			if cfg.Queue.NotifyQueueURL == "" || vars["BERTH_QUEUE_CREATE_QUEUE_URL"] != nil || vars["BERTH_QUEUE_LIFECYCLE_QUEUE_URL"] != nil {
				t.Errorf("%s: want its own queue's URL only", f.logicalID)
			}
		} else if f.kind != "api" && f.kind != "watcher" && f.kind != "logs" && f.kind != "exec" && !wiring.HasQueues(cfg) {
			t.Errorf("%s: both queue URLs are needed", f.logicalID)
		}
		if f.kind == "api" && (vars["BERTH_QUEUE_CREATE_QUEUE_URL"] != nil || vars["BERTH_QUEUE_LIFECYCLE_QUEUE_URL"] != nil) {
			t.Errorf("ApiFunction knows a queue: it must never send to one")
		}
	}
}

// TestTemplateQueuesAndConcurrency: redrive after max_attempts receives,
// the create limit as reserved and maximum concurrency, timeouts and
// visibility derived from create_start_timeout.
func TestTemplateQueuesAndConcurrency(t *testing.T) {
	c := loadTemplate(t)
	global := c.env("ApiFunction")
	attempts := paramOf(global["BERTH_CONTAINER_MAX_ATTEMPTS"])
	conc := paramOf(global["BERTH_CONTAINER_CREATE_QUEUE_MAX_CONCURRENCY"])
	startTO := paramOf(global["BERTH_CONTAINER_CREATE_START_TIMEOUT"])
	if attempts == "" || conc == "" || startTO == "" {
		t.Fatalf("max_attempts, create_queue_max_concurrency and create_start_timeout must each come from a parameter: %q %q %q", attempts, conc, startTO)
	}

	findInMap := func(v any, key string) {
		t.Helper()
		l := asList(asMap(v)["Fn::FindInMap"])
		if len(l) != 3 || l[0] != "CreateStartTimeouts" || paramOf(l[1]) != startTO || l[2] != key {
			t.Errorf("%v: want FindInMap [CreateStartTimeouts, !Ref %s, %s]", v, startTO, key)
		}
	}
	for _, q := range []string{"CreateQueue", "LifecycleQueue"} {
		p := c.resource(q, "AWS::SQS::Queue")
		rp := asMap(p["RedrivePolicy"])
		if paramOf(rp["maxReceiveCount"]) != attempts {
			t.Errorf("%s: maxReceiveCount %v, want !Ref %s (max_attempts)", q, rp["maxReceiveCount"], attempts)
		}
		if dlq := getAtt(rp["deadLetterTargetArn"]); dlq == nil {
			t.Errorf("%s: no dead-letter queue", q)
		} else {
			c.resource(dlq[0], "AWS::SQS::Queue")
		}
		findInMap(p["VisibilityTimeout"], "QueueVisibility")
	}
	for _, w := range []string{"CreateWorkerFunction", "LifecycleWorkerFunction"} {
		findInMap(c.resource(w, "AWS::Serverless::Function")["Timeout"], "WorkerTimeout")
	}

	// Every allowed create_start_timeout has a row, and each row's
	// numbers hold: the worker's timeout leaves the wait, the worker's own
	// margin and time to place and create; visibility is 6 × that timeout.
	allowed := asList(c.param(startTO)["AllowedValues"])
	rows := asMap(asMap(c.doc["Mappings"])["CreateStartTimeouts"])
	if len(allowed) != len(rows) {
		t.Errorf("%s allows %v; the mapping has %d rows", startTO, allowed, len(rows))
	}
	for _, a := range allowed {
		row := asMap(rows[scalar(a)])
		secs, _ := strconv.Atoi(scalar(a))
		fnTO, _ := row["WorkerTimeout"].(float64)
		vis, _ := row["QueueVisibility"].(float64)
		wait := time.Duration(secs) * time.Second
		if got := time.Duration(fnTO) * time.Second; got < wait+worker.InvocationMargin+30*time.Second || got > 15*time.Minute {
			t.Errorf("create_start_timeout %s: worker timeout %s, want ≥ %s + %s + 30 s and ≤ 15 min", wait, got, wait, worker.InvocationMargin)
		}
		if vis < 6*fnTO {
			t.Errorf("create_start_timeout %s: visibility %v s < 6 × the worker timeout %v s", wait, vis, fnTO)
		}
	}
	if got, want := c.resolve(global["BERTH_CONTAINER_CREATE_START_TIMEOUT"]), config.Default().Container.CreateStartTimeout; got != fmt.Sprintf("%.0fs", want.Seconds()) {
		t.Errorf("create_start_timeout defaults to %s in the template, %s in the configuration", got, want)
	}

	// The create limit.
	cw := c.resource("CreateWorkerFunction", "AWS::Serverless::Function")
	if paramOf(c.reservedConcurrency(cw)) != conc {
		t.Errorf("CreateWorker reserved concurrency %v, want !Ref %s", cw["ReservedConcurrentExecutions"], conc)
	}
	if r := c.loopReservedConcurrency(c.resource("ReconcilerFunction", "AWS::Serverless::Function")); r != 1.0 {
		t.Errorf("reconciler reserved concurrency %v, want 1 (one pass at a time)", r)
	}
	m := c.resource("CreateWorkerQueueMapping", "AWS::Lambda::EventSourceMapping")
	if paramOf(m["FunctionName"]) != "CreateWorkerFunction" || m["BatchSize"] != 1.0 {
		t.Errorf("CreateWorkerQueueMapping: function %v, batch %v; want the CreateWorker, one message per invocation", m["FunctionName"], m["BatchSize"])
	}
	mc := asList(asMap(asMap(m["ScalingConfig"])["MaximumConcurrency"])["Fn::If"])
	if len(mc) != 3 || mc[1] != 2.0 || paramOf(mc[2]) != conc {
		t.Errorf("MaximumConcurrency %v, want !If [ConcurrencyIsOne, 2, !Ref %s]", m["ScalingConfig"], conc)
	} else if cond := asList(asMap(asMap(c.doc["Conditions"])[mc[0].(string)])["Fn::Equals"]); len(cond) != 2 || paramOf(cond[0]) != conc || scalar(cond[1]) != "1" {
		t.Errorf("condition %s: %v, want %s = 1", mc[0], cond, conc)
	}
	for _, name := range []string{"CreateWorkerQueueMapping", "LifecycleWorkerQueueMapping"} {
		if !slices.Contains(asList(c.resource(name, "AWS::Lambda::EventSourceMapping")["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
			t.Errorf("%s does not report batch item failures", name)
		}
	}

	api := c.resource("ApiFunction", "AWS::Serverless::Function")
	if to, _ := api["Timeout"].(float64); time.Duration(to)*time.Second <= config.Default().Server.WaitMax || to > 30 {
		t.Errorf("ApiFunction timeout %v s: want more than wait_max (%s) and at most API Gateway's 30 s", to, config.Default().Server.WaitMax)
	}
}

// reservedConcurrency is a function's ReservedConcurrentExecutions when
// UseReservedConcurrency is true; it fails unless the property is
// !If [ReserveConcurrency, value, !Ref AWS::NoValue] with that condition
// testing the parameter, so that UseReservedConcurrency=false leaves the
// function unreserved (a new account's quota has no room for a reservation).
func (c *cfnTemplate) reservedConcurrency(fn map[string]any) any {
	c.t.Helper()
	l := asList(asMap(fn["ReservedConcurrentExecutions"])["Fn::If"])
	if len(l) != 3 || paramOf(l[2]) != "AWS::NoValue" {
		c.t.Errorf("ReservedConcurrentExecutions %v: want !If [ReserveConcurrency, value, !Ref AWS::NoValue]", fn["ReservedConcurrentExecutions"])
		return nil
	}
	cond := asList(asMap(asMap(c.doc["Conditions"])[scalar(l[0])])["Fn::Equals"])
	if len(cond) != 2 || paramOf(cond[0]) != "UseReservedConcurrency" || scalar(cond[1]) != "true" {
		c.t.Errorf("condition %v: %v, want UseReservedConcurrency = true", l[0], cond)
	}
	if d := scalar(c.param("UseReservedConcurrency")["Default"]); d != "true" {
		c.t.Errorf("UseReservedConcurrency defaults to %q, want true", d)
	}
	return l[1]
}

// loopReservedConcurrency is the reconciler's or the watcher's
// ReservedConcurrentExecutions when UseReservedConcurrency is true and
// FleetShards is 1; it fails unless the property is
// !If [ReserveLoopConcurrency, value, !Ref AWS::NoValue] with that
// condition the And of ReserveConcurrency's test and FleetShards = 1: a
// fleet of more than one shard runs a shard per invocation at once.
func (c *cfnTemplate) loopReservedConcurrency(fn map[string]any) any {
	c.t.Helper()
	l := asList(asMap(fn["ReservedConcurrentExecutions"])["Fn::If"])
	if len(l) != 3 || scalar(l[0]) != "ReserveLoopConcurrency" || paramOf(l[2]) != "AWS::NoValue" {
		c.t.Errorf("ReservedConcurrentExecutions %v: want !If [ReserveLoopConcurrency, value, !Ref AWS::NoValue]", fn["ReservedConcurrentExecutions"])
		return nil
	}
	and := asList(asMap(asMap(c.doc["Conditions"])["ReserveLoopConcurrency"])["Fn::And"])
	want := [][2]string{{"UseReservedConcurrency", "true"}, {"FleetShards", "1"}}
	for i, w := range want {
		var eq []any
		if i < len(and) {
			eq = asList(asMap(and[i])["Fn::Equals"])
		}
		if len(and) != len(want) || len(eq) != 2 || paramOf(eq[0]) != w[0] || scalar(eq[1]) != w[1] {
			c.t.Errorf("condition ReserveLoopConcurrency: %v, want !And [UseReservedConcurrency = true, FleetShards = 1]", and)
			return nil
		}
	}
	// ReserveConcurrency itself, as reservedConcurrency checks it.
	c.reservedConcurrency(map[string]any{"ReservedConcurrentExecutions": map[string]any{"Fn::If": []any{"ReserveConcurrency", l[1], l[2]}}})
	return l[1]
}

// TestTemplateQueuePoliciesAndAsyncInvoke: every queue's policy denies
// requests not made over TLS, and the reconciler's asynchronous invocations
// (the Scheduler's) are not retried by Lambda nor kept past a minute.
func TestTemplateQueuePoliciesAndAsyncInvoke(t *testing.T) {
	c := loadTemplate(t)
	covered := map[string]bool{}
	for name, p := range c.resourcesOf("AWS::SQS::QueuePolicy") {
		qs := asList(p["Queues"])
		st := asList(asMap(p["PolicyDocument"])["Statement"])
		if len(qs) != 1 || len(st) != 1 {
			t.Errorf("%s: %d queues, %d statements; want one of each", name, len(qs), len(st))
			continue
		}
		s := asMap(st[0])
		cond := asMap(asMap(s["Condition"])["Bool"])
		if s["Effect"] != "Deny" || s["Action"] != "sqs:*" || asMap(s["Principal"])["AWS"] != "*" || scalar(cond["aws:SecureTransport"]) != "false" {
			t.Errorf("%s: statement %v, want a Deny of sqs:* to anyone without aws:SecureTransport", name, s)
		}
		if ga := getAtt(s["Resource"]); ga == nil || ga[0] != paramOf(qs[0]) {
			t.Errorf("%s: resource %v is not its queue %v", name, s["Resource"], qs[0])
		}
		covered[paramOf(qs[0])] = true
	}
	for name := range c.resourcesOf("AWS::SQS::Queue") {
		if !covered[name] {
			t.Errorf("queue %s has no policy refusing insecure transport", name)
		}
	}
	eic := asMap(c.resource("ReconcilerFunction", "AWS::Serverless::Function")["EventInvokeConfig"])
	if eic["MaximumRetryAttempts"] != 0.0 || eic["MaximumEventAgeInSeconds"] != 60.0 {
		t.Errorf("ReconcilerFunction EventInvokeConfig %v, want no retries and 60 s", eic)
	}
}

// TestTemplateUserPoolMfa: the Cognito pool takes its MFA setting from
// UserPoolMfa (offered by default, required in samconfig.toml's prod) with
// authenticator apps, and passwords need a symbol.
func TestTemplateUserPoolMfa(t *testing.T) {
	c := loadTemplate(t)
	pool := c.resource("UserPool", "AWS::Cognito::UserPool")
	if paramOf(pool["MfaConfiguration"]) != "UserPoolMfa" || !reflect.DeepEqual(pool["EnabledMfas"], []any{"SOFTWARE_TOKEN_MFA"}) {
		t.Errorf("MFA %v %v, want !Ref UserPoolMfa with SOFTWARE_TOKEN_MFA", pool["MfaConfiguration"], pool["EnabledMfas"])
	}
	if d := scalar(c.param("UserPoolMfa")["Default"]); d != "OPTIONAL" {
		t.Errorf("UserPoolMfa defaults to %q, want OPTIONAL", d)
	}
	if pp := asMap(asMap(pool["Policies"])["PasswordPolicy"]); pp["RequireSymbols"] != true {
		t.Errorf("password policy %v: want symbols required", pp)
	}
	raw, err := os.ReadFile("samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "LogRetentionDays=365 UserPoolMfa=ON") {
		t.Error("samconfig.toml's prod does not require MFA (UserPoolMfa=ON)")
	}
}

// TestTemplateUserPoolThreatProtection: UserPoolThreatProtection (off by
// default, ENFORCED in samconfig.toml's prod) chooses the pool's properties
// block; the two blocks differ in the Plus feature plan and the add-on's mode
// only, and goformation reads the default's block (the second) typed.
func TestTemplateUserPoolThreatProtection(t *testing.T) {
	c := loadTemplate(t)
	r := asMap(asMap(c.doc["Resources"])["UserPool"])
	branches, _ := asMap(r["Properties"])["Fn::If"].([]any)
	if len(branches) != 3 || branches[0] != "ThreatProtection" {
		t.Fatalf("UserPool's Properties are not !If [ThreatProtection, …, …]: %v", r["Properties"])
	}
	on, off := maps.Clone(asMap(branches[1])), asMap(branches[2])
	if on["UserPoolTier"] != "PLUS" || paramOf(asMap(on["UserPoolAddOns"])["AdvancedSecurityMode"]) != "UserPoolThreatProtection" {
		t.Errorf("with threat protection: tier %v, add-ons %v; want PLUS and !Ref UserPoolThreatProtection", on["UserPoolTier"], on["UserPoolAddOns"])
	}
	delete(on, "UserPoolTier")
	delete(on, "UserPoolAddOns")
	if !reflect.DeepEqual(on, off) {
		t.Errorf("the two UserPool blocks differ beyond the tier and add-ons:\n%v\n%v", on, off)
	}
	cond := asMap(asMap(c.doc["Conditions"])["ThreatProtection"])
	if !strings.Contains(fmt.Sprint(cond), "UserPoolThreatProtection") || !strings.Contains(fmt.Sprint(cond), "OFF") {
		t.Errorf("condition ThreatProtection %v: want UserPoolThreatProtection other than OFF", cond)
	}
	if d := scalar(c.param("UserPoolThreatProtection")["Default"]); d != "OFF" {
		t.Errorf("UserPoolThreatProtection defaults to %q, want OFF (goformation reads the default's block)", d)
	}
	raw, err := os.ReadFile("samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "UserPoolThreatProtection=ENFORCED") {
		t.Error("samconfig.toml's prod does not enforce threat protection (UserPoolThreatProtection=ENFORCED)")
	}
}

// TestTemplateDispatch: the stream mapping is bounded and ends in a queue
// for the operator, the schedule drives the reconciler, and the outbox
// alarm watches the metric the sweep emits.
func TestTemplateDispatch(t *testing.T) {
	c := loadTemplate(t)
	m := c.resource("DispatcherStreamMapping", "AWS::Lambda::EventSourceMapping")
	if src := getAtt(m["EventSourceArn"]); !slices.Equal(src, []string{"OutboxTable", "StreamArn"}) {
		t.Errorf("stream mapping source %v, want the outbox table's stream", m["EventSourceArn"])
	}
	var pattern struct{ EventName []string }
	filters := asList(asMap(m["FilterCriteria"])["Filters"])
	if len(filters) != 1 || json.Unmarshal([]byte(scalar(asMap(filters[0])["Pattern"])), &pattern) != nil ||
		!slices.Equal(pattern.EventName, []string{"INSERT"}) {
		t.Errorf("filter %v, want INSERTs only", m["FilterCriteria"])
	}
	retries, _ := m["MaximumRetryAttempts"].(float64)
	age, _ := m["MaximumRecordAgeInSeconds"].(float64)
	if m["BisectBatchOnFunctionError"] != true || retries < 1 || retries > 10 || age < 60 || age > 3600 ||
		!slices.Contains(asList(m["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		t.Errorf("stream mapping %v: want bisect, 1-10 retries, a record age of 1-60 min, batch item failures", m)
	}
	if dest := getAtt(asMap(asMap(m["DestinationConfig"])["OnFailure"])["Destination"]); dest == nil {
		t.Errorf("no on-failure destination")
	} else {
		c.resource(dest[0], "AWS::SQS::Queue")
	}

	s := c.resource("ReconcileSchedule", "AWS::Scheduler::Schedule")
	if tgt := getAtt(asMap(s["Target"])["Arn"]); tgt == nil || tgt[0] != "ReconcilerFunction" {
		t.Errorf("schedule target %v, want the reconciler", s["Target"])
	}
	if expr := c.resolve(s["ScheduleExpression"]); expr != "rate(1 minute)" {
		t.Errorf("schedule %q by default, want rate(1 minute)", expr)
	}

	a := c.resource("OutboxNotDrainingAlarm", "AWS::CloudWatch::Alarm")
	if a["Namespace"] != metrics.Namespace || a["MetricName"] != outbox.MetricOldestPendingAge {
		t.Errorf("outbox alarm on %v/%v, want %s/%s", a["Namespace"], a["MetricName"], metrics.Namespace, outbox.MetricOldestPendingAge)
	}
	for _, q := range []string{"CreateDeadLetterQueue", "LifecycleDeadLetterQueue", "NotifyDeadLetterQueue", "StreamFailureQueue"} {
		found := false
		for _, a := range c.resourcesOf("AWS::CloudWatch::Alarm") {
			for _, d := range asList(a["Dimensions"]) {
				if v := getAtt(asMap(d)["Value"]); v != nil && v[0] == q {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no alarm on %s's depth", q)
		}
	}
}

// TestTemplateLeastPrivilege: no wildcard action; "*" resources only for
// actions that take no other; queues written only by the dispatcher and
// the reconciler; runtime secrets read only by workers and the reconciler.
func TestTemplateLeastPrivilege(t *testing.T) {
	c := loadTemplate(t)
	onlyStar := []string{"ecr:GetAuthorizationToken", "dynamodb:ListStreams"}
	actions := map[string][]string{}
	// ssmReads are the resources each owner may ssm:GetParameter, as written.
	ssmReads := map[string][]string{}
	check := func(owner string, stmts []any) {
		for _, st := range stmts {
			st := asMap(st)
			var acts []string
			switch a := st["Action"].(type) {
			case string:
				acts = []string{a}
			case []any:
				for _, x := range a {
					acts = append(acts, scalar(x))
				}
			}
			res := st["Resource"]
			star := res == "*" || slices.Contains(asList(res), any("*"))
			for _, a := range acts {
				if a == "*" || strings.HasSuffix(a, ":*") {
					t.Errorf("%s: wildcard action %s", owner, a)
				}
				if star && !slices.Contains(onlyStar, a) {
					t.Errorf("%s: %s on every resource", owner, a)
				}
				actions[owner] = append(actions[owner], a)
				if a == "ssm:GetParameter" {
					ssmReads[owner] = append(ssmReads[owner], fmt.Sprint(res))
				}
			}
		}
	}
	for _, f := range functions {
		for _, pol := range c.functionPolicies(f.logicalID) {
			p := asMap(pol)
			if ifs := asList(p["Fn::If"]); ifs != nil {
				p = asMap(ifs[1])
			}
			if p == nil {
				t.Errorf("%s: a policy that is not an inline statement list: %v", f.logicalID, pol)
				continue
			}
			check(f.logicalID, asList(p["Statement"]))
		}
	}
	for name, role := range c.resourcesOf("AWS::IAM::Role") {
		for _, p := range asList(role["Policies"]) {
			check(name, asList(asMap(asMap(p)["PolicyDocument"])["Statement"]))
		}
	}
	for _, f := range functions {
		acts := actions[f.logicalID]
		sends := slices.Contains(acts, "sqs:SendMessage")
		// The notify function re-sends a failed delivery to its own queue
		// (TestTemplateNotify holds it to that queue); the watcher's tick
		// sends its shards' messages to its shard queue (TestTemplateFleet).
		if wantSend := f.kind == "dispatcher" || f.kind == "reconciler" || f.kind == wiring.FunctionNotify || f.kind == "watcher"; sends != wantSend {
			t.Errorf("%s: sqs:SendMessage = %v, want %v", f.logicalID, sends, wantSend)
		}
		if f.kind == "api" && slices.ContainsFunc(acts, func(a string) bool { return strings.HasPrefix(a, "sqs:") }) {
			t.Errorf("ApiFunction may act on a queue: %v", acts)
		}
		if reads := slices.Contains(acts, "secretsmanager:GetSecretValue"); reads != f.secret {
			t.Errorf("%s: secretsmanager:GetSecretValue = %v, want %v", f.logicalID, reads, f.secret)
		}
		// Templates' secret_env values are resolved only where containers
		// are made: the two workers. The configuration parameter is read by
		// every function that uses the configuration (not the dispatcher),
		// and on that one parameter only.
		readsSecretEnv, readsConfig := false, false
		for _, res := range ssmReads[f.logicalID] {
			switch {
			case strings.Contains(res, "${SecretsParameterPath}*"):
				readsSecretEnv = true
			case strings.HasSuffix(res, ":parameter${ConfigParameterName}]"):
				readsConfig = true
			default:
				t.Errorf("%s: ssm:GetParameter on %s", f.logicalID, res)
			}
		}
		if want := f.kind == "worker"; readsSecretEnv != want {
			t.Errorf("%s: ssm:GetParameter under SecretsParameterPath = %v, want %v", f.logicalID, readsSecretEnv, want)
		}
		if want := f.kind != "dispatcher"; readsConfig != want {
			t.Errorf("%s: ssm:GetParameter on ConfigParameterName = %v, want %v", f.logicalID, readsConfig, want)
		}
	}
}

// TestTemplateAPI: every path behind the JWT authorizer but the OpenAPI
// document (GET /api/openapi.json, to anyone), payload 2.0, the route keys
// the events/api-*.json fixtures carry, and Cognito's admin group named as
// the functions' configuration names it.
func TestTemplateAPI(t *testing.T) {
	c := loadTemplate(t)
	route := c.resource("HttpApiRoute", "AWS::ApiGatewayV2::Route")
	if route["RouteKey"] != "ANY /{proxy+}" || route["AuthorizationType"] != "JWT" || paramOf(route["AuthorizerId"]) != "HttpApiAuthorizer" {
		t.Errorf("route %v: want ANY /{proxy+} with the JWT authorizer", route)
	}
	doc := c.resource("HttpApiOpenAPIRoute", "AWS::ApiGatewayV2::Route")
	if doc["RouteKey"] != "GET /api/openapi.json" || doc["AuthorizationType"] != "NONE" || doc["Target"] == nil || !reflect.DeepEqual(doc["Target"], route["Target"]) {
		t.Errorf("route %v: want GET /api/openapi.json without authorizer, to the same integration", doc)
	}
	// The probes, to anyone (docs/api.md); /healthz stays under the proxy route.
	// The console's static files too (#29): the page signs in itself.
	public := map[string]string{"HttpApiOpenAPIRoute": "GET /api/openapi.json", "HttpApiLivezRoute": "GET /livez", "HttpApiReadyzRoute": "GET /readyz",
		"HttpApiConsoleRootRoute": "GET /", "HttpApiConsoleRoute": "GET /console", "HttpApiConsoleAssetsRoute": "GET /console/{proxy+}"}
	for name, key := range public {
		if r := c.resource(name, "AWS::ApiGatewayV2::Route"); r["RouteKey"] != key || r["AuthorizationType"] != "NONE" || !reflect.DeepEqual(r["Target"], route["Target"]) {
			t.Errorf("route %s %v: want %s without authorizer, to the same integration", name, r, key)
		}
	}
	routeKeys := map[string]bool{}
	for name, r := range c.resourcesOf("AWS::ApiGatewayV2::Route") {
		if _, open := public[name]; r["AuthorizationType"] != "JWT" && !open {
			t.Errorf("route %s (%v) is not behind the JWT authorizer", name, r["RouteKey"])
		}
		routeKeys[fmt.Sprint(r["RouteKey"])] = true
	}
	if a := c.resource("HttpApiAuthorizer", "AWS::ApiGatewayV2::Authorizer"); a["AuthorizerType"] != "JWT" {
		t.Errorf("authorizer %v", a)
	}
	integ := c.resource("HttpApiIntegration", "AWS::ApiGatewayV2::Integration")
	if integ["PayloadFormatVersion"] != "2.0" || integ["IntegrationType"] != "AWS_PROXY" || getAtt(integ["IntegrationUri"])[0] != "ApiFunction" {
		t.Errorf("integration %v: want AWS_PROXY 2.0 to the ApiFunction", integ)
	}
	// The logs and stats routes: behind the authorizer, to the logs
	// function, the one that reaches the runtimes (the api function holds
	// no runtime client).
	for name, key := range map[string]string{"HttpApiLogsRoute": "GET /api/containers/{id}/logs", "HttpApiStatsRoute": "GET /api/containers/{id}/stats"} {
		r := c.resource(name, "AWS::ApiGatewayV2::Route")
		if r["RouteKey"] != key || r["AuthorizationType"] != "JWT" || paramOf(r["AuthorizerId"]) != "HttpApiAuthorizer" ||
			!strings.Contains(fmt.Sprint(r["Target"]), "HttpApiLogsIntegration") {
			t.Errorf("%s %v: want %s with the JWT authorizer, to HttpApiLogsIntegration", name, r, key)
		}
	}
	if li := c.resource("HttpApiLogsIntegration", "AWS::ApiGatewayV2::Integration"); li["PayloadFormatVersion"] != "2.0" ||
		li["IntegrationType"] != "AWS_PROXY" || getAtt(li["IntegrationUri"])[0] != "LogsFunction" {
		t.Errorf("logs integration %v: want AWS_PROXY 2.0 to the LogsFunction", li)
	}
	// The exec route: behind the authorizer, to the exec function (it
	// reaches the runtimes and writes the history).
	if r := c.resource("HttpApiExecRoute", "AWS::ApiGatewayV2::Route"); r["RouteKey"] != "POST /api/containers/{id}/exec" ||
		r["AuthorizationType"] != "JWT" || paramOf(r["AuthorizerId"]) != "HttpApiAuthorizer" || !strings.Contains(fmt.Sprint(r["Target"]), "HttpApiExecIntegration") {
		t.Errorf("HttpApiExecRoute %v: want POST /api/containers/{id}/exec with the JWT authorizer, to HttpApiExecIntegration", r)
	}
	if ei := c.resource("HttpApiExecIntegration", "AWS::ApiGatewayV2::Integration"); ei["PayloadFormatVersion"] != "2.0" ||
		ei["IntegrationType"] != "AWS_PROXY" || getAtt(ei["IntegrationUri"])[0] != "ExecFunction" {
		t.Errorf("exec integration %v: want AWS_PROXY 2.0 to the ExecFunction", ei)
	}
	files, _ := filepath.Glob("events/api-*.json")
	if len(files) == 0 {
		t.Fatal("no events/api-*.json")
	}
	logsFixtures, _ := filepath.Glob("events/logs-*.json")
	if len(logsFixtures) == 0 {
		t.Fatal("no events/logs-*.json")
	}
	execFixtures, _ := filepath.Glob("events/exec-*.json")
	if len(execFixtures) == 0 {
		t.Fatal("no events/exec-*.json")
	}
	files = append(append(files, logsFixtures...), execFixtures...)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct{ RouteKey string }
		if err := json.Unmarshal(raw, &ev); err != nil || !routeKeys[ev.RouteKey] {
			t.Errorf("%s: routeKey %q, the stack's routes are %v", f, ev.RouteKey, slices.Sorted(maps.Keys(routeKeys)))
		}
	}
	group := c.resource("AdminUserGroup", "AWS::Cognito::UserPoolGroup")
	if paramOf(group["GroupName"]) != paramOf(c.env("ApiFunction")["BERTH_AUTH_ADMIN_GROUP"]) {
		t.Errorf("the Cognito admin group %v is not the one the API function checks", group["GroupName"])
	}
	if c.resolve(group["GroupName"]) != config.Default().Auth.AdminGroup || c.resolve(c.env("ApiFunction")["BERTH_AUTH_ADMIN_CLAIM"]) != config.Default().Auth.AdminClaim {
		t.Errorf("admin group/claim defaults differ from the configuration's")
	}
}

// TestSamconfig: every environment of samconfig.toml deploys its own stack
// and tables, with the capabilities the template needs, and overrides only
// parameters the template has, with values they allow.
func TestSamconfig(t *testing.T) {
	c := loadTemplate(t)
	raw, err := os.ReadFile("samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	section := ""
	stacks, prefixes := map[string]string{}, map[string]string{}
	deploys := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		key, val = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(val), `"`)
		env, _, _ := strings.Cut(section, ".")
		switch key {
		case "stack_name":
			stacks[env] = val
		case "capabilities":
			deploys[env] = true
			for _, want := range []string{"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"} {
				if !slices.Contains(strings.Fields(val), want) {
					t.Errorf("[%s] capabilities %q lack %s", section, val, want)
				}
			}
		case "resolve_s3":
			if val != "true" {
				t.Errorf("[%s] resolve_s3 = %s: a first deploy needs the managed bucket", section, val)
			}
		case "parameter_overrides":
			for _, kv := range strings.Fields(val) {
				k, v, _ := strings.Cut(kv, "=")
				p := c.param(k)
				if allowed := asList(p["AllowedValues"]); allowed != nil && !slices.ContainsFunc(allowed, func(a any) bool { return scalar(a) == v }) {
					t.Errorf("[%s] %s=%s is not among %v", section, k, v, allowed)
				}
				if k == "TablePrefix" {
					prefixes[env] = v
				}
			}
		}
	}
	for _, env := range []string{"default", "dev", "prod"} {
		if stacks[env] == "" || prefixes[env] == "" || !deploys[env] {
			t.Errorf("environment %s: stack %q, table prefix %q, deploy section %v", env, stacks[env], prefixes[env], deploys[env])
		}
	}
	if len(slices.Compact(slices.Sorted(maps.Values(prefixes)))) != len(prefixes) {
		t.Errorf("two environments share tables: %v", prefixes)
	}
}

// TestTemplateVPCAccessOnlyWithVpc: a function with a VpcConfig has a role
// the template writes out (SAM would give the role it makes the VPC access
// policy even when HasVpc leaves the VpcConfig out), and that role has the
// policy only under HasVpc.
func TestTemplateVPCAccessOnlyWithVpc(t *testing.T) {
	c := loadTemplate(t)
	withVpc := 0
	for name, fn := range c.resourcesOf("AWS::Serverless::Function") {
		if fn["VpcConfig"] == nil {
			continue
		}
		withVpc++
		role := getAtt(fn["Role"])
		if role == nil {
			t.Errorf("%s has a VpcConfig and no role of its own: SAM would attach the VPC access policy unconditionally", name)
			continue
		}
		var unconditional, conditional int
		for _, arn := range asList(c.resource(role[0], "AWS::IAM::Role")["ManagedPolicyArns"]) {
			text, _ := json.Marshal(arn)
			if !strings.Contains(string(text), "AWSLambdaVPCAccessExecutionRole") {
				continue
			}
			if ifs := asList(asMap(arn)["Fn::If"]); len(ifs) == 3 && ifs[0] == "HasVpc" && strings.Contains(fmt.Sprint(ifs[2]), "AWS::NoValue") {
				conditional++
			} else {
				unconditional++
			}
		}
		if conditional != 1 || unconditional != 0 {
			t.Errorf("%s: the VPC access policy %d times under HasVpc and %d times without, want once under HasVpc", role[0], conditional, unconditional)
		}
	}
	if withVpc != 7 {
		t.Errorf("%d functions with a VpcConfig, want 7 (the workers, the reconciler, the watcher, the logs, the exec and the notify functions)", withVpc)
	}
}

// TestTemplateConsoleSignIn: the web console signs in with the stack's
// pool through a client of its own, public (no secret) and on the code
// flow only, whose callback is the console's address on this API, on
// hosted pages at a domain of the stack's own; the authorizer accepts its
// tokens, and the api function tells the console where the provider is
// (the pool, or JwtIssuer with the first of JwtAudience).
func TestTemplateConsoleSignIn(t *testing.T) {
	c := loadTemplate(t)
	cl := c.resource("ConsoleUserPoolClient", "AWS::Cognito::UserPoolClient")
	if cl["GenerateSecret"] != false || cl["AllowedOAuthFlowsUserPoolClient"] != true ||
		!reflect.DeepEqual(cl["AllowedOAuthFlows"], []any{"code"}) || !slices.Contains(asList(cl["AllowedOAuthScopes"]), any("openid")) {
		t.Errorf("console client %v: want a public client on the code flow with openid", cl)
	}
	callback := map[string]any{"Fn::Sub": "${HttpApi.ApiEndpoint}/console"}
	if !reflect.DeepEqual(cl["CallbackURLs"], []any{callback}) || !reflect.DeepEqual(cl["LogoutURLs"], []any{callback}) {
		t.Errorf("console client callbacks %v %v: want the console's address only", cl["CallbackURLs"], cl["LogoutURLs"])
	}
	if d := c.resource("UserPoolDomain", "AWS::Cognito::UserPoolDomain"); paramOf(d["UserPoolId"]) != "UserPool" || !strings.Contains(fmt.Sprint(d["Domain"]), "AWS::StackId") {
		t.Errorf("user pool domain %v: want the pool's, named from the stack id", d)
	}
	audIf := asList(asMap(asMap(c.resource("HttpApiAuthorizer", "AWS::ApiGatewayV2::Authorizer")["JwtConfiguration"])["Audience"])["Fn::If"])
	if len(audIf) != 3 || !slices.ContainsFunc(asList(audIf[1]), func(v any) bool { return paramOf(v) == "ConsoleUserPoolClient" }) {
		t.Errorf("authorizer audience %v: want the console client with the pool", audIf)
	}
	env := c.env("ApiFunction")
	if s := fmt.Sprint(env["BERTH_AUTH_OIDC_ISSUER"]); !strings.Contains(s, "cognito-idp") || !strings.Contains(s, "JwtIssuer") {
		t.Errorf("BERTH_AUTH_OIDC_ISSUER %s: want the pool's issuer or JwtIssuer", s)
	}
	if s := fmt.Sprint(env["BERTH_AUTH_OIDC_CLIENT_ID"]); !strings.Contains(s, "ConsoleUserPoolClient") || !strings.Contains(s, "JwtAudience") {
		t.Errorf("BERTH_AUTH_OIDC_CLIENT_ID %s: want the console client or the first of JwtAudience", s)
	}
}
