package berthstack

import (
	"encoding/json"
	"fmt"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/wiring"
)

// withProps is DefaultProps changed by f.
func withProps(f func(*Props)) Props {
	p := DefaultProps()
	if f != nil {
		f(&p)
	}
	return p
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// TestCreateWorkerConcurrency: the create limit is the create worker's reserved concurrency,
// and its mapping never invokes past it (with AWS's floor of 2 for a limit of 1); one create
// per invocation.
func TestCreateWorkerConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit, wantMapping int
	}{
		{limit: 3, wantMapping: 3},
		{limit: 1, wantMapping: 2},
		{limit: 10, wantMapping: 10},
	} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) { p.CreateQueueMaxConcurrency = tc.limit }))
			fn := s.logicalID(t, s.stack.Workers.Create)
			if got := num(s.props(t, fn)["ReservedConcurrentExecutions"]); got != float64(tc.limit) {
				t.Errorf("ReservedConcurrentExecutions = %v, want %d", got, tc.limit)
			}
			s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
				"FunctionName":          ref(fn),
				"EventSourceArn":        getAtt(s.logicalID(t, s.stack.Pipeline.Create.Queue), "Arn"),
				"BatchSize":             1,
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": tc.wantMapping},
			})
			env := s.props(t, fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if env[envMaxConcurrency] != fmt.Sprint(tc.limit) {
				t.Errorf("%s = %v, want %d", envMaxConcurrency, env[envMaxConcurrency], tc.limit)
			}
		})
	}
}

// TestNoReservedConcurrency: with UseReservedConcurrency off no function reserves concurrency
// (a new account's quota has no room for any), and the create mapping's maximum concurrency is
// the create limit (AWS's floor of 2 for a limit of 1).
func TestNoReservedConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit, wantMapping int
	}{
		{limit: 3, wantMapping: 3},
		{limit: 1, wantMapping: 2},
	} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) { p.CreateQueueMaxConcurrency, p.UseReservedConcurrency = tc.limit, false }))
			for id, props := range s.ofType("AWS::Lambda::Function") {
				if r, ok := props["ReservedConcurrentExecutions"]; ok {
					t.Errorf("%s reserves %v", id, r)
				}
			}
			s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
				"FunctionName":  ref(s.logicalID(t, s.stack.Workers.Create)),
				"ScalingConfig": map[string]any{"MaximumConcurrency": tc.wantMapping},
			})
		})
	}
	// The loops reserve only for a fleet of one shard for sure (fleetshard's default of one
	// per 100 nodes may fan a tick out to shards that run at once).
	for shards, want := range map[int]float64{0: 0, 1: 1, 4: 0} {
		s := synth(t, withProps(func(p *Props) { p.FleetShards = shards }))
		if got := num(s.props(t, s.logicalID(t, s.stack.Reconciler.Function))["ReservedConcurrentExecutions"]); got != want {
			t.Errorf("FleetShards %d: reconciler ReservedConcurrentExecutions = %v, want %v", shards, got, want)
		}
	}
}

// TestDispatcherMapping: INSERTs only, partial batch failures, bisect, bounded retries and
// record age, and an on-failure destination.
func TestDispatcherMapping(t *testing.T) {
	s := synth(t, DefaultProps())
	fn := s.logicalID(t, s.stack.Pipeline.Dispatcher)
	s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName":                   ref(fn),
		"EventSourceArn":                 getAtt(s.logicalID(t, s.stack.Tables.Table(dynamostore.TableOutbox)), "StreamArn"),
		"StartingPosition":               "TRIM_HORIZON",
		"BatchSize":                      DispatcherBatchSize,
		"MaximumBatchingWindowInSeconds": 0,
		"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
		"BisectBatchOnFunctionError":     true,
		"MaximumRetryAttempts":           DispatcherMaxRetries,
		"MaximumRecordAgeInSeconds":      DispatcherMaxRecordAge.Seconds(),
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{
			"Destination": getAtt(s.logicalID(t, s.stack.Pipeline.StreamFailure), "Arn"),
		}},
	})
	m := s.props(t, s.logicalID(t, s.stack.Pipeline.StreamMapping))
	filters := m["FilterCriteria"].(map[string]any)["Filters"].([]any)
	if len(filters) != 1 {
		t.Fatalf("filters = %v, want one", filters)
	}
	var pattern map[string][]string
	if err := json.Unmarshal([]byte(filters[0].(map[string]any)["Pattern"].(string)), &pattern); err != nil {
		t.Fatalf("filter pattern: %v", err)
	}
	if len(pattern) != 1 || !slices.Equal(pattern["eventName"], []string{"INSERT"}) {
		t.Errorf("filter pattern = %v, want eventName INSERT only", pattern)
	}
}

// TestQueues: redrive after max_attempts receives, to the queue's own dead-letter queue, and a
// visibility timeout of six times its consumer's timeout, within Lambda's 15 minutes.
func TestQueues(t *testing.T) {
	for _, tc := range []struct {
		maxAttempts, createStart int
	}{
		{maxAttempts: 5, createStart: 300},
		{maxAttempts: 8, createStart: 840},
		{maxAttempts: 1, createStart: 60},
	} {
		t.Run(fmt.Sprintf("attempts=%d,start=%ds", tc.maxAttempts, tc.createStart), func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) {
				p.MaxAttempts = tc.maxAttempts
				p.CreateStartTimeoutSeconds = tc.createStart
			}))
			for _, q := range []Queue{s.stack.Pipeline.Create, s.stack.Pipeline.Lifecycle} {
				qid, dlq := s.logicalID(t, q.Queue), s.logicalID(t, q.DeadLetter)
				qp := s.props(t, qid)
				rp := qp["RedrivePolicy"].(map[string]any)
				if num(rp["maxReceiveCount"]) != float64(tc.maxAttempts) {
					t.Errorf("%s maxReceiveCount = %v, want %d", qid, rp["maxReceiveCount"], tc.maxAttempts)
				}
				if fmt.Sprint(rp["deadLetterTargetArn"]) != fmt.Sprint(getAtt(dlq, "Arn")) {
					t.Errorf("%s dead letters go to %v, want %s", qid, rp["deadLetterTargetArn"], dlq)
				}
				consumer := consumerOf(t, s, qid)
				timeout := num(s.props(t, consumer)["Timeout"])
				if timeout > 900 || timeout < float64(tc.createStart) {
					t.Errorf("%s timeout %vs: want create_start_timeout %ds .. 900s", consumer, timeout, tc.createStart)
				}
				if vis := num(qp["VisibilityTimeout"]); vis < VisibilityFactor*timeout {
					t.Errorf("%s visibility %vs < %d × %s's timeout %vs", qid, vis, VisibilityFactor, consumer, timeout)
				}
			}
		})
	}
}

// consumerOf is the function whose event source mapping reads the queue.
func consumerOf(t *testing.T, s *synthesized, queueID string) string {
	t.Helper()
	var found []string
	for _, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
		if fmt.Sprint(m["EventSourceArn"]) == fmt.Sprint(getAtt(queueID, "Arn")) {
			found = append(found, m["FunctionName"].(map[string]any)["Ref"].(string))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has consumers %v, want one", queueID, found)
	}
	return found[0]
}

// TestReconcilerSchedule: the schedule invokes the reconciler with the given expression, no
// retries, one pass at a time (a fleet of one shard), and every reconcile setting the local
// server passes.
func TestReconcilerSchedule(t *testing.T) {
	for _, expr := range []string{DefaultReconcileSchedule, "rate(5 minutes)", "cron(0/2 * * * ? *)"} {
		t.Run(expr, func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) {
				p.ReconcileSchedule = expr
				p.OrphanGraceSeconds = 600
				p.OutboxSweepAfterSeconds = 45
				p.FleetShards = 1
			}))
			fn := s.logicalID(t, s.stack.Reconciler.Function)
			s.has(t, "AWS::Scheduler::Schedule", map[string]any{
				"ScheduleExpression": expr,
				"FlexibleTimeWindow": map[string]any{"Mode": "OFF"},
				"Target": map[string]any{
					"Arn":         getAtt(fn, "Arn"),
					"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0},
				},
			})
			p := s.props(t, fn)
			if num(p["ReservedConcurrentExecutions"]) != 1 {
				t.Errorf("reconciler reserved concurrency = %v, want 1", p["ReservedConcurrentExecutions"])
			}
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for k, want := range map[string]string{envOrphanGrace: "600s", envOutboxSweepAfter: "45s", envCreateStartTimeout: "300s", envStopGracePeriod: "10s"} {
				if env[k] != want {
					t.Errorf("%s = %v, want %s", k, env[k], want)
				}
			}
			for _, k := range []string{envCreateQueueURL, envLifecycleQueueURL, envTablePrefix, envDockerScope} {
				if env[k] == nil {
					t.Errorf("reconciler has no %s", k)
				}
			}
		})
	}
}

// statement is one (effect, action, resource) of a role, resource as JSON.
type statement struct{ effect, action, resource string }

// rolePermissions returns each role's statements, inline and attached, and its managed
// policies.
func rolePermissions(t *testing.T, s *synthesized) (map[string][]statement, map[string][]string) {
	t.Helper()
	stmts, managed := map[string][]statement{}, map[string][]string{}
	add := func(role string, doc any) {
		for _, st := range asList(doc.(map[string]any)["Statement"]) {
			sm := st.(map[string]any)
			for _, a := range asList(sm["Action"]) {
				for _, r := range asList(sm["Resource"]) {
					b, _ := json.Marshal(r)
					stmts[role] = append(stmts[role], statement{fmt.Sprint(sm["Effect"]), fmt.Sprint(a), string(b)})
				}
			}
		}
	}
	for id, p := range s.ofType("AWS::IAM::Role") {
		for _, pol := range asList(p["Policies"]) {
			add(id, pol.(map[string]any)["PolicyDocument"])
		}
		for _, m := range asList(p["ManagedPolicyArns"]) {
			b, _ := json.Marshal(m)
			managed[id] = append(managed[id], string(b))
		}
	}
	for _, p := range s.ofType("AWS::IAM::Policy") {
		for _, r := range asList(p["Roles"]) {
			add(r.(map[string]any)["Ref"].(string), p["PolicyDocument"])
		}
	}
	return stmts, managed
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// TestLeastPrivilege: no wildcard action anywhere, and on "*" only the two actions that take
// no resource (the ECR token, listing streams); only
// the dispatcher and the reconciler send to queues; the api function reaches tables only;
// only the workers and the reconciler read the runtime secret; managed policies are the
// Lambda service roles and X-Ray only.
func TestLeastPrivilege(t *testing.T) {
	const secret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:berth-hosts-AbCdEf"
	s := synth(t, withProps(func(p *Props) { p.RuntimeConfigSecretArn = secret }))
	stmts, managed := rolePermissions(t, s)
	roleOf := map[string]string{}
	for name, c := range map[string]string{
		"api":        s.logicalID(t, s.stack.API.Function),
		"dispatcher": s.logicalID(t, s.stack.Pipeline.Dispatcher),
		"create":     s.logicalID(t, s.stack.Workers.Create),
		"lifecycle":  s.logicalID(t, s.stack.Workers.Lifecycle),
		"reconciler": s.logicalID(t, s.stack.Reconciler.Function),
		"watcher":    s.logicalID(t, s.stack.Watcher.Function),
		"logs":       s.logicalID(t, s.stack.Logs.Function),
		"notify":     s.logicalID(t, s.stack.Notify.Function),
		"exec":       s.logicalID(t, s.stack.Exec.Function),
	} {
		r := s.props(t, c)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		roleOf[name] = r
	}
	holders := func(pred func(statement) bool) []string {
		var out []string
		for name, r := range roleOf {
			if slices.ContainsFunc(stmts[r], pred) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for r, list := range stmts {
		for _, st := range list {
			if st.effect != "Allow" {
				t.Errorf("%s: unexpected %s statement %v", r, st.effect, st)
			}
			if strings.Contains(st.action, "*") {
				t.Errorf("%s: wildcard action %s on %s", r, st.action, st.resource)
			}
			if st.resource == `"*"` && st.action != "ecr:GetAuthorizationToken" && st.action != "dynamodb:ListStreams" {
				t.Errorf("%s: %s on every resource", r, st.action)
			}
		}
	}
	for _, tc := range []struct {
		what string
		pred func(statement) bool
		want []string
	}{
		// The notify function re-sends failed deliveries to its own queue (TestNotify); the
		// reconciler and the watcher send a tick's shards to their own shard queues (TestShardQueues).
		{"send to a queue", func(st statement) bool { return st.action == "sqs:SendMessage" }, []string{"dispatcher", "notify", "reconciler", "watcher"}},
		{"read the runtime secret", func(st statement) bool {
			return st.action == "secretsmanager:GetSecretValue" && st.resource == `"`+secret+`"`
		}, []string{"create", "exec", "lifecycle", "logs", "reconciler", "watcher"}},
		{"any secret or parameter", func(st statement) bool {
			return strings.HasPrefix(st.action, "secretsmanager:") || strings.HasPrefix(st.action, "ssm:")
		}, []string{"create", "exec", "lifecycle", "logs", "reconciler", "watcher"}},
		// The logs function reads one instance and writes nothing; the exec function
		// writes the history and its leases.
		{"write a table", func(st statement) bool {
			return st.action == "dynamodb:PutItem" || st.action == "dynamodb:UpdateItem" || st.action == "dynamodb:DeleteItem"
		}, []string{"api", "create", "dispatcher", "exec", "lifecycle", "notify", "reconciler", "watcher"}},
		{"any queue action", func(st statement) bool { return strings.HasPrefix(st.action, "sqs:") },
			[]string{"create", "dispatcher", "lifecycle", "notify", "reconciler", "watcher"}},
		{"table scans", func(st statement) bool { return st.action == "dynamodb:Scan" }, []string{"api"}},
		{"read template secrets", func(st statement) bool { return st.action == "ssm:GetParameter" }, []string{"create", "lifecycle"}},
		{"ECR pull tokens", func(st statement) bool { return st.action == "ecr:GetAuthorizationToken" },
			[]string{"create", "lifecycle"}},
		{"read the outbox stream", func(st statement) bool { return st.action == "dynamodb:GetRecords" }, []string{"dispatcher"}},
		{"consume a queue", func(st statement) bool { return st.action == "sqs:ReceiveMessage" }, []string{"create", "lifecycle", "notify", "reconciler", "watcher"}},
		{"put events on the bus", func(st statement) bool { return st.action == "events:PutEvents" }, []string{"notify"}},
	} {
		if got := holders(tc.pred); !slices.Equal(got, tc.want) {
			t.Errorf("functions that %s: %v, want %v", tc.what, got, tc.want)
		}
	}
	allowed := []string{"AWSLambdaBasicExecutionRole", "AWSXrayWriteOnlyAccess", "AWSLambdaVPCAccessExecutionRole"}
	for r, list := range managed {
		for _, m := range list {
			if !slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(m, "policy/"+a+`"`) || strings.Contains(m, "/"+a+`"`) }) {
				t.Errorf("%s: managed policy %s", r, m)
			}
		}
	}
	if m := managed[roleOf["api"]]; len(m) != 2 {
		t.Errorf("api role managed policies = %v, want logs and X-Ray only", m)
	}
}

// TestTablesFromStore: the tables are dynamostore.Tables: names, keys, indexes, stream and
// TTL, with point-in-time recovery, retention on delete, and deletion protection as asked.
func TestTablesFromStore(t *testing.T) {
	for _, protect := range []bool{true, false} {
		t.Run(fmt.Sprint("protection=", protect), func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) { p.DeletionProtection = protect; p.TablePrefix = "prod-" }))
			defs := dynamostore.Tables("prod-")
			if n := len(s.ofType("AWS::DynamoDB::Table")); n != len(defs) {
				t.Fatalf("%d tables, want %d", n, len(defs))
			}
			for _, def := range defs {
				id := s.logicalID(t, s.stack.Tables.Table(def.Table))
				res := s.resource(t, id)
				if res["DeletionPolicy"] != "Retain" || res["UpdateReplacePolicy"] != "Retain" {
					t.Errorf("%s: deletion %v, replace %v, want Retain both", id, res["DeletionPolicy"], res["UpdateReplacePolicy"])
				}
				p := res["Properties"].(map[string]any)
				want := map[string]any{
					"TableName":                        aws.ToString(def.Create.TableName),
					"BillingMode":                      string(def.Create.BillingMode),
					"DeletionProtectionEnabled":        protect,
					"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				}
				var keys []any
				for _, k := range def.Create.KeySchema {
					keys = append(keys, map[string]any{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
				}
				want["KeySchema"] = keys
				var attrs []any
				for _, a := range def.Create.AttributeDefinitions {
					attrs = append(attrs, map[string]any{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
				}
				want["AttributeDefinitions"] = attrs
				for k, v := range want {
					if fmt.Sprint(p[k]) != fmt.Sprint(v) {
						t.Errorf("%s %s = %v, want %v", def.Table, k, p[k], v)
					}
				}
				var gsis []string
				for _, g := range asList(p["GlobalSecondaryIndexes"]) {
					gsis = append(gsis, fmt.Sprint(g))
				}
				var wantGSIs []string
				for _, g := range def.Create.GlobalSecondaryIndexes {
					var ks []any
					for _, k := range g.KeySchema {
						ks = append(ks, map[string]any{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
					}
					wantGSIs = append(wantGSIs, fmt.Sprint(map[string]any{"IndexName": *g.IndexName, "KeySchema": ks,
						"Projection": map[string]any{"ProjectionType": string(g.Projection.ProjectionType)}}))
				}
				if !slices.Equal(gsis, wantGSIs) {
					t.Errorf("%s indexes = %v, want %v", def.Table, gsis, wantGSIs)
				}
				stream := p["StreamSpecification"]
				if def.Create.StreamSpecification == nil {
					if stream != nil {
						t.Errorf("%s has a stream %v", def.Table, stream)
					}
				} else if fmt.Sprint(stream) != fmt.Sprint(map[string]any{"StreamViewType": string(def.Create.StreamSpecification.StreamViewType)}) {
					t.Errorf("%s stream = %v, want %s", def.Table, stream, def.Create.StreamSpecification.StreamViewType)
				}
				ttl := p["TimeToLiveSpecification"]
				if def.TTLAttribute == "" {
					if ttl != nil {
						t.Errorf("%s has TTL %v", def.Table, ttl)
					}
				} else if fmt.Sprint(ttl) != fmt.Sprint(map[string]any{"AttributeName": def.TTLAttribute, "Enabled": true}) {
					t.Errorf("%s TTL = %v, want %s", def.Table, ttl, def.TTLAttribute)
				}
			}
		})
	}
}

// TestFunctions: every function is the architecture's custom runtime on arm64 with active
// tracing and JSON logs to its own log group; VPC placement only for those that reach Docker
// hosts, and only when subnets are given.
func TestFunctions(t *testing.T) {
	for _, vpc := range []bool{false, true} {
		t.Run(fmt.Sprint("vpc=", vpc), func(t *testing.T) {
			s := synth(t, withProps(func(p *Props) {
				if vpc {
					p.SubnetIDs, p.SecurityGroupIDs = []string{"subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"}, []string{"sg-0a1b2c3d4e5f60718"}
				}
			}))
			inVPC := map[string]bool{
				s.logicalID(t, s.stack.Workers.Create):      true,
				s.logicalID(t, s.stack.Workers.Lifecycle):   true,
				s.logicalID(t, s.stack.Reconciler.Function): true,
				s.logicalID(t, s.stack.Watcher.Function):    true,
				s.logicalID(t, s.stack.Logs.Function):       true,
				s.logicalID(t, s.stack.Notify.Function):     true,
				s.logicalID(t, s.stack.Exec.Function):       true,
			}
			fns := s.ofType("AWS::Lambda::Function")
			if len(fns) != 9 {
				t.Fatalf("%d functions, want 9", len(fns))
			}
			for id, p := range fns {
				memory := FunctionMemoryMB
				if id == s.logicalID(t, s.stack.Watcher.Function) {
					memory = WatcherMemoryMB
				}
				for k, want := range map[string]string{
					"Runtime": "provided.al2023", "Architectures": "[arm64]", "Handler": "bootstrap",
					"MemorySize": fmt.Sprint(memory), "TracingConfig": "map[Mode:Active]",
				} {
					if fmt.Sprint(p[k]) != want {
						t.Errorf("%s %s = %v, want %s", id, k, p[k], want)
					}
				}
				s.has(t, "AWS::Logs::LogGroup", map[string]any{
					"LogGroupName":    map[string]any{"Fn::Join": []any{"", []any{"/aws/lambda/", ref(id)}}},
					"RetentionInDays": DefaultLogRetentionDays,
				})
				_, hasVPC := p["VpcConfig"]
				if hasVPC != (vpc && inVPC[id]) {
					t.Errorf("%s VpcConfig %v, want %v", id, p["VpcConfig"], vpc && inVPC[id])
				}
			}
		})
	}
}

// TestMissingBinary: a function without its bootstrap is an error that says to build.
func TestMissingBinary(t *testing.T) {
	p := DefaultProps()
	p.DistDir = t.TempDir()
	jsiiDo(t, "New", func() {
		_, err := New(awscdkApp(t), "berth", nil, p)
		if err == nil || !strings.Contains(err.Error(), "make build") {
			t.Errorf("New without binaries: %v, want an error naming `make build`", err)
		}
	})
}

// TestAuth: without an issuer the stack trusts its own Cognito pool; with one, no pool, and
// the given issuer and audiences.
func TestAuth(t *testing.T) {
	t.Run("cognito", func(t *testing.T) {
		s := synth(t, DefaultProps())
		if n := len(s.ofType("AWS::Cognito::UserPool")); n != 1 {
			t.Fatalf("%d user pools, want 1", n)
		}
		pool, client := s.logicalID(t, s.stack.API.UserPool), s.logicalID(t, s.stack.API.UserPoolClient)
		s.has(t, "AWS::Cognito::UserPoolGroup", map[string]any{"GroupName": config.Default().Auth.AdminGroup, "UserPoolId": ref(pool)})
		s.has(t, "AWS::ApiGatewayV2::Authorizer", map[string]any{
			"AuthorizerType": "JWT",
			"JwtConfiguration": map[string]any{
				// The CLI's client and the web console's (TestConsoleSignIn).
				"Audience": []any{ref(client), ref(s.logicalID(t, s.stack.API.ConsoleClient))},
				"Issuer":   map[string]any{"Fn::Join": []any{"", []any{"https://cognito-idp.", ref("AWS::Region"), ".amazonaws.com/", ref(pool)}}},
			},
		})
	})
	t.Run("issuer", func(t *testing.T) {
		s := synth(t, withProps(func(p *Props) {
			p.JWTIssuer, p.JWTAudience = "https://login.example.com/", []string{"cli", "web"}
		}))
		if n := len(s.ofType("AWS::Cognito::UserPool")); n != 0 {
			t.Errorf("%d user pools with an external issuer", n)
		}
		s.has(t, "AWS::ApiGatewayV2::Authorizer", map[string]any{
			"AuthorizerType":   "JWT",
			"IdentitySource":   []any{"$request.header.Authorization"},
			"JwtConfiguration": map[string]any{"Audience": []any{"cli", "web"}, "Issuer": "https://login.example.com/"},
		})
	})
	s := synth(t, DefaultProps())
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "ANY " + APIRoutePath, "AuthorizationType": "JWT"})
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET " + OpenAPIRoutePath, "AuthorizationType": "NONE"})
	// The probes without a token (docs/api.md); /healthz stays under the authorized proxy route.
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET /livez", "AuthorizationType": "NONE"})
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET /readyz", "AuthorizationType": "NONE"})
	// The console's static files without a token: the page signs in itself (#29).
	for _, path := range ConsoleRoutePaths {
		s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET " + path, "AuthorizationType": "NONE"})
	}
	// The logs and stats routes, behind the authorizer, to the logs function.
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET " + LogsRoutePath, "AuthorizationType": "JWT"})
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "GET " + StatsRoutePath, "AuthorizationType": "JWT"})
	// The exec route, behind the authorizer, to the exec function.
	s.has(t, "AWS::ApiGatewayV2::Route", map[string]any{"RouteKey": "POST " + ExecRoutePath, "AuthorizationType": "JWT"})
	if n := len(s.ofType("AWS::ApiGatewayV2::Route")); n != 10 {
		t.Errorf("%d routes, want 10 (every path behind the authorizer but the OpenAPI document, /livez, /readyz and the console's three; the logs, stats and exec routes)", n)
	}
}

// TestAlarmTopic: every alarm notifies a topic on alarm and on recovery: the one given, or,
// without one, the stack's own, encrypted with a key CloudWatch may use, TLS publishers only.
// The reconciler and the watcher have errors alarms that tolerate one failed run.
func TestAlarmTopic(t *testing.T) {
	const topic = "arn:aws:sns:eu-west-1:123456789012:ops"
	for _, tc := range []struct {
		topic   string
		watcher bool
		alarms  int
	}{{"", true, 10}, {topic, true, 10}, {"", false, 9}} {
		s := synth(t, withProps(func(p *Props) { p.AlarmTopicARN, p.RuntimeWatcher = tc.topic, tc.watcher }))
		alarms := s.ofType("AWS::CloudWatch::Alarm")
		if len(alarms) != tc.alarms {
			t.Errorf("topic %q, watcher %v: %d alarms, want %d", tc.topic, tc.watcher, len(alarms), tc.alarms)
		}
		var want any = topic
		if tc.topic == "" {
			if s.stack.Alarms.OwnTopic == nil {
				t.Fatal("no topic of the stack's own without AlarmTopicArn")
			}
			id := s.logicalID(t, s.stack.Alarms.OwnTopic)
			want = ref(id)
			key := s.logicalID(t, s.stack.Alarms.TopicKey)
			if got := s.props(t, id)["KmsMasterKeyId"]; fmt.Sprint(got) != fmt.Sprint(ref(key)) {
				t.Errorf("topic key %v, want the stack's key %s", got, key)
			}
			kp, _ := json.Marshal(s.props(t, key)["KeyPolicy"])
			if !strings.Contains(string(kp), `"Service":"cloudwatch.amazonaws.com"`) || s.props(t, key)["EnableKeyRotation"] != true {
				t.Errorf("key policy %s (rotation %v): want CloudWatch allowed, rotation on", kp, s.props(t, key)["EnableKeyRotation"])
			}
			tp, _ := json.Marshal(s.props(t, s.logicalID(t, s.stack.Alarms.TopicPolicy))["PolicyDocument"])
			if !strings.Contains(string(tp), `"aws:SecureTransport":"false"`) {
				t.Errorf("topic policy %s does not refuse publishers without TLS", tp)
			}
		} else if len(s.ofType("AWS::SNS::Topic")) != 0 || len(s.ofType("AWS::KMS::Key")) != 0 {
			t.Errorf("with AlarmTopicArn the stack still makes a topic or a key")
		}
		for id, a := range alarms {
			for _, k := range []string{"AlarmActions", "OKActions"} {
				if got := fmt.Sprint(a[k]); got != fmt.Sprint([]any{want}) {
					t.Errorf("%s %s %v, want [%v]", id, k, a[k], want)
				}
			}
		}
		for _, fn := range []constructs.IConstruct{s.stack.Reconciler.Function, watcherFunction(s.stack)} {
			if fn == nil {
				continue
			}
			s.has(t, "AWS::CloudWatch::Alarm", map[string]any{
				"MetricName": "Errors", "Namespace": "AWS/Lambda",
				"Dimensions":        []any{map[string]any{"Name": "FunctionName", "Value": ref(s.logicalID(t, fn))}},
				"EvaluationPeriods": RunErrorsEvaluationPeriods, "DatapointsToAlarm": RunErrorsDatapoints,
				"Threshold": 0, "ComparisonOperator": "GreaterThanThreshold",
			})
		}
	}
}

// watcherFunction is s's watcher function, or nil.
func watcherFunction(s *Stack) constructs.IConstruct {
	if s.Watcher == nil {
		return nil
	}
	return s.Watcher.Function
}

// TestLifecycleConcurrency: the lifecycle worker's mapping never has more invocations in
// flight than LifecycleQueueMaxConcurrency.
func TestLifecycleConcurrency(t *testing.T) {
	for _, limit := range []int{DefaultLifecycleQueueMaxConcurrency, 2, 40} {
		s := synth(t, withProps(func(p *Props) { p.LifecycleQueueMaxConcurrency = limit }))
		s.has(t, "AWS::Lambda::EventSourceMapping", map[string]any{
			"FunctionName":   ref(s.logicalID(t, s.stack.Workers.Lifecycle)),
			"EventSourceArn": getAtt(s.logicalID(t, s.stack.Pipeline.Lifecycle.Queue), "Arn"),
			"ScalingConfig":  map[string]any{"MaximumConcurrency": limit},
		})
	}
	if _, err := LoadProps(lookupOf(map[string]string{ParamLifecycleQueueMaxConcurrency: "1"})); err == nil ||
		!strings.Contains(err.Error(), ParamLifecycleQueueMaxConcurrency) {
		t.Errorf("LifecycleQueueMaxConcurrency=1 (under AWS's floor): err %v", err)
	}
}

// TestEnvNames: every variable the stack sets is one the functions read.
func TestEnvNames(t *testing.T) {
	known := config.EnvKeys()
	for _, n := range envNames() {
		if !slices.Contains(known, n) {
			t.Errorf("%s is not a configuration variable", n)
		}
	}
	if envConfigParameter != wiring.ConfigParameterVar {
		t.Errorf("the parameter's variable is %s, the functions read %s", envConfigParameter, wiring.ConfigParameterVar)
	}
	if envConfigSecret != wiring.ConfigSecretVar {
		t.Errorf("the secret's variable is %s, the functions read %s", envConfigSecret, wiring.ConfigSecretVar)
	}
}

// TestQueuesRefuseInsecureTransport: each of the nine queues' policies (the two shard queues with
// the default FleetShards) denies every SQS action
// on it to anyone not using TLS (aws:SecureTransport false).
func TestQueuesRefuseInsecureTransport(t *testing.T) {
	s := synth(t, DefaultProps())
	queues := s.ofType("AWS::SQS::Queue")
	if len(queues) != 9 {
		t.Fatalf("%d queues, want 9", len(queues))
	}
	for id := range queues {
		s.has(t, "AWS::SQS::QueuePolicy", map[string]any{
			"Queues": []any{ref(id)},
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Action": "sqs:*", "Effect": "Deny", "Principal": map[string]any{"AWS": "*"},
				"Resource":  getAtt(id, "Arn"),
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			}}},
		})
	}
}

// TestReconcilerAsyncInvoke: the Scheduler's asynchronous invocations (of the reconciler and
// the watcher) are neither retried by Lambda nor kept past a minute.
func TestReconcilerAsyncInvoke(t *testing.T) {
	s := synth(t, DefaultProps())
	for _, fn := range []awslambda.Function{s.stack.Reconciler.Function, s.stack.Watcher.Function} {
		s.has(t, "AWS::Lambda::EventInvokeConfig", map[string]any{
			"FunctionName":             ref(s.logicalID(t, fn)),
			"Qualifier":                "$LATEST",
			"MaximumRetryAttempts":     0,
			"MaximumEventAgeInSeconds": 60,
		})
	}
	if n := len(s.ofType("AWS::Lambda::EventInvokeConfig")); n != 2 {
		t.Errorf("%d async invoke configs, want the reconciler's and the watcher's only", n)
	}
}

// TestUserPoolMfa: the stack's pool offers MFA with an authenticator app by default and
// requires it with UserPoolMfa ON; passwords need a symbol too.
func TestUserPoolMfa(t *testing.T) {
	for _, mfa := range UserPoolMfaChoices {
		s := synth(t, withProps(func(p *Props) { p.UserPoolMfa = mfa }))
		s.has(t, "AWS::Cognito::UserPool", map[string]any{
			"MfaConfiguration": mfa,
			"EnabledMfas":      []any{"SOFTWARE_TOKEN_MFA"},
			"Policies":         map[string]any{"PasswordPolicy": map[string]any{"MinimumLength": 12, "RequireSymbols": true}},
		})
	}
}

// TestUserPoolThreatProtection: threat protection off leaves the pool on its default plan;
// AUDIT or ENFORCED puts it on the Plus plan with that mode (cdk-nag's COG8 then holds without
// a suppression: TestNag's prod case).
func TestUserPoolThreatProtection(t *testing.T) {
	for _, mode := range UserPoolThreatProtectionChoices {
		s := synth(t, withProps(func(p *Props) { p.UserPoolThreatProtection = mode }))
		pools := s.ofType("AWS::Cognito::UserPool")
		if len(pools) != 1 {
			t.Fatalf("%s: %d user pools", mode, len(pools))
		}
		for _, props := range pools {
			tier, addOns := props["UserPoolTier"], props["UserPoolAddOns"]
			if mode == "OFF" {
				if tier != nil || addOns != nil {
					t.Errorf("OFF: tier %v, add-ons %v; want neither", tier, addOns)
				}
				continue
			}
			if m, _ := addOns.(map[string]any); tier != "PLUS" || len(m) != 1 || m["AdvancedSecurityMode"] != mode {
				t.Errorf("%s: tier %v, add-ons %v; want PLUS and AdvancedSecurityMode %s", mode, tier, addOns, mode)
			}
		}
	}
}

// TestConsoleSignIn: with the stack's pool, the console has its own public client on the code
// flow whose callback is the console's address, hosted pages at the stack's domain, and the
// authorizer accepts its tokens; the api function names the provider to the console (the pool
// and that client, or JwtIssuer and the first of JwtAudience).
func TestConsoleSignIn(t *testing.T) {
	s := synth(t, DefaultProps())
	consoleURL := map[string]any{"Fn::Join": []any{"", []any{getAtt(s.logicalID(t, s.stack.API.HTTPAPI), "ApiEndpoint"), "/console"}}}
	s.has(t, "AWS::Cognito::UserPoolClient", map[string]any{
		"GenerateSecret": false, "AllowedOAuthFlowsUserPoolClient": true, "AllowedOAuthFlows": []any{"code"},
		"CallbackURLs": []any{consoleURL}, "LogoutURLs": []any{consoleURL},
	})
	if n := len(s.ofType("AWS::Cognito::UserPoolDomain")); n != 1 {
		t.Errorf("%d user pool domains, want 1", n)
	}
	console := s.logicalID(t, s.stack.API.ConsoleClient)
	s.has(t, "AWS::ApiGatewayV2::Authorizer", map[string]any{"JwtConfiguration": map[string]any{
		"Audience": []any{ref(s.logicalID(t, s.stack.API.UserPoolClient)), ref(console)}}})
	env := s.props(t, s.logicalID(t, s.stack.API.Function))["Environment"].(map[string]any)["Variables"].(map[string]any)
	if fmt.Sprint(env[envOIDCClientID]) != fmt.Sprint(ref(console)) || !strings.Contains(fmt.Sprint(env[envOIDCIssuer]), "cognito-idp") {
		t.Errorf("api function's provider: %v %v", env[envOIDCIssuer], env[envOIDCClientID])
	}

	ext := synth(t, withProps(func(p *Props) { p.JWTIssuer = "https://login.example.com/"; p.JWTAudience = []string{"web", "cli"} }))
	env = ext.props(t, ext.logicalID(t, ext.stack.API.Function))["Environment"].(map[string]any)["Variables"].(map[string]any)
	if env[envOIDCIssuer] != "https://login.example.com/" || env[envOIDCClientID] != "web" {
		t.Errorf("api function's provider with an external issuer: %v %v", env[envOIDCIssuer], env[envOIDCClientID])
	}
}
