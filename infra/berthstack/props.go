package berthstack

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/config"
)

// Props are a deployment's choices: the CDK twin of template.yaml's Parameters, with the same
// names and defaults, so one stack can be deployed either way with the same settings.
type Props struct {
	// JWTIssuer is the issuer URL of an existing identity provider whose tokens the API accepts.
	// Empty means the stack creates a Cognito user pool, an app client and the admin group, and
	// trusts that pool. Defaults to "".
	JWTIssuer string
	// JWTAudience lists the audiences (client ids) accepted with JWTIssuer; required with it.
	JWTAudience []string
	// AdminGroup is the group whose members see every owner's containers (auth.admin_group).
	// Defaults to config's auth.admin_group.
	AdminGroup string
	// CreateQueueMaxConcurrency is container.create_queue_max_concurrency: both the create
	// worker's reserved concurrency and its queue mapping's maximum concurrency. SQS allows no
	// maximum concurrency below 2, so a value of 1 is held by the reserved concurrency alone.
	// Defaults to config's container.create_queue_max_concurrency.
	CreateQueueMaxConcurrency int
	// CreateQueueMaxPending is container.create_queue_max_pending. Defaults to config's.
	CreateQueueMaxPending int
	// MaxAttempts is container.max_attempts: the queues' maxReceiveCount. Defaults to config's.
	MaxAttempts int
	// ReconcileSchedule is the reconciler's EventBridge Scheduler expression.
	// Defaults to DefaultReconcileSchedule.
	ReconcileSchedule string
	// SubnetIDs and SecurityGroupIDs put the functions that reach Docker hosts or clusters
	// (workers, reconciler) in a VPC; both empty means no VPC. Defaults to none.
	SubnetIDs        []string
	SecurityGroupIDs []string
	// AlarmTopicARN is an SNS topic the alarms notify; empty means alarms without actions.
	AlarmTopicARN string
	// DeletionProtection protects the tables from deletion. Defaults to true.
	DeletionProtection bool
	// DistDir holds dist/<fn>/bootstrap, what `make build` writes. Defaults to DefaultDistDir.
	DistDir string
}

// DefaultReconcileSchedule runs the reconciler once a minute: the bound on noticing a container
// that exits by itself on AWS.
const DefaultReconcileSchedule = "rate(1 minute)"

// DefaultDistDir is where `make build` leaves the function binaries, seen from infra/.
const DefaultDistDir = "../dist"

// DefaultProps are the values of template.yaml's parameter defaults.
func DefaultProps() Props {
	c := config.Default()
	return Props{
		AdminGroup:                c.Auth.AdminGroup,
		CreateQueueMaxConcurrency: c.Container.CreateQueueMaxConcurrency,
		CreateQueueMaxPending:     c.Container.CreateQueueMaxPending,
		MaxAttempts:               c.Container.MaxAttempts,
		ReconcileSchedule:         DefaultReconcileSchedule,
		DeletionProtection:        true,
		DistDir:                   DefaultDistDir,
	}
}

// Lookup returns a setting by its parameter name, and whether it is set.
type Lookup func(name string) (string, bool)

// EnvName is the environment variable that sets parameter name when no context value does:
// CreateQueueMaxConcurrency → BERTH_CDK_CREATE_QUEUE_MAX_CONCURRENCY.
func EnvName(name string) string {
	var b strings.Builder
	b.WriteString("BERTH_CDK_")
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' && !(name[i-1] >= 'A' && name[i-1] <= 'Z') {
			b.WriteByte('_')
		}
		b.WriteString(strings.ToUpper(string(r)))
	}
	return b.String()
}

// The parameter names, shared by template.yaml, CDK context (-c Name=value) and, through
// EnvName, the environment.
const (
	ParamJWTIssuer                 = "JwtIssuer"
	ParamJWTAudience               = "JwtAudience"
	ParamAdminGroup                = "AdminGroup"
	ParamCreateQueueMaxConcurrency = "CreateQueueMaxConcurrency"
	ParamCreateQueueMaxPending     = "CreateQueueMaxPending"
	ParamMaxAttempts               = "MaxAttempts"
	ParamReconcileSchedule         = "ReconcileSchedule"
	ParamSubnetIDs                 = "SubnetIds"
	ParamSecurityGroupIDs          = "SecurityGroupIds"
	ParamAlarmTopicARN             = "AlarmTopicArn"
	ParamDeletionProtection        = "DeletionProtection"
	ParamDistDir                   = "DistDir"
)

var scheduleRE = regexp.MustCompile(`^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\)|at\(.+\))$`)

// LoadProps starts from DefaultProps and applies every parameter lookup has. Errors name the
// parameter and its bad value; all of them are returned together.
func LoadProps(lookup Lookup) (Props, error) {
	p := DefaultProps()
	var errs []error
	str := func(name string, dst *string) {
		if v, ok := lookup(name); ok {
			*dst = strings.TrimSpace(v)
		}
	}
	list := func(name string, dst *[]string) {
		if v, ok := lookup(name); ok {
			*dst = splitList(v)
		}
	}
	integer := func(name string, dst *int) {
		if v, ok := lookup(name); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a whole number", name, v))
				return
			}
			*dst = n
		}
	}
	boolean := func(name string, dst *bool) {
		if v, ok := lookup(name); ok {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
				return
			}
			*dst = b
		}
	}
	str(ParamJWTIssuer, &p.JWTIssuer)
	list(ParamJWTAudience, &p.JWTAudience)
	str(ParamAdminGroup, &p.AdminGroup)
	integer(ParamCreateQueueMaxConcurrency, &p.CreateQueueMaxConcurrency)
	integer(ParamCreateQueueMaxPending, &p.CreateQueueMaxPending)
	integer(ParamMaxAttempts, &p.MaxAttempts)
	str(ParamReconcileSchedule, &p.ReconcileSchedule)
	list(ParamSubnetIDs, &p.SubnetIDs)
	list(ParamSecurityGroupIDs, &p.SecurityGroupIDs)
	str(ParamAlarmTopicARN, &p.AlarmTopicARN)
	boolean(ParamDeletionProtection, &p.DeletionProtection)
	str(ParamDistDir, &p.DistDir)
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	return p, p.Validate()
}

// Validate reports every setting that cannot make a working stack.
func (p Props) Validate() error {
	var errs []error
	if p.JWTIssuer != "" {
		if u, err := url.Parse(p.JWTIssuer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not an https URL", ParamJWTIssuer, p.JWTIssuer))
		}
		if len(p.JWTAudience) == 0 {
			errs = append(errs, fmt.Errorf("%s: required with %s (the client ids the tokens are issued to)", ParamJWTAudience, ParamJWTIssuer))
		}
	} else if len(p.JWTAudience) > 0 {
		errs = append(errs, fmt.Errorf("%s: set without %s (the stack's own Cognito pool has its own client)", ParamJWTAudience, ParamJWTIssuer))
	}
	if p.AdminGroup == "" {
		errs = append(errs, fmt.Errorf("%s: empty", ParamAdminGroup))
	}
	if p.CreateQueueMaxConcurrency < 1 || p.CreateQueueMaxConcurrency > 1000 {
		errs = append(errs, fmt.Errorf("%s: %d is outside 1..1000", ParamCreateQueueMaxConcurrency, p.CreateQueueMaxConcurrency))
	}
	if p.CreateQueueMaxPending < 1 {
		errs = append(errs, fmt.Errorf("%s: %d is below 1", ParamCreateQueueMaxPending, p.CreateQueueMaxPending))
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > 1000 {
		errs = append(errs, fmt.Errorf("%s: %d is outside 1..1000 (SQS maxReceiveCount)", ParamMaxAttempts, p.MaxAttempts))
	}
	if !scheduleRE.MatchString(p.ReconcileSchedule) {
		errs = append(errs, fmt.Errorf("%s: %q is not rate(N unit), cron(...) or at(...)", ParamReconcileSchedule, p.ReconcileSchedule))
	}
	if (len(p.SubnetIDs) == 0) != (len(p.SecurityGroupIDs) == 0) {
		errs = append(errs, fmt.Errorf("%s and %s: set both or neither", ParamSubnetIDs, ParamSecurityGroupIDs))
	}
	if p.AlarmTopicARN != "" && !strings.HasPrefix(p.AlarmTopicARN, "arn:") {
		errs = append(errs, fmt.Errorf("%s: %q is not an ARN", ParamAlarmTopicARN, p.AlarmTopicARN))
	}
	if p.DistDir == "" {
		errs = append(errs, fmt.Errorf("%s: empty", ParamDistDir))
	}
	return errors.Join(errs...)
}

// splitList splits a comma-separated value, as CloudFormation's CommaDelimitedList does,
// dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ContextStackName is the context key (and, through EnvName, the variable) naming the stack.
const ContextStackName = "StackName"

// DefaultStackName is the stack's name when none is given: samconfig.toml's default.
const DefaultStackName = "berth"

// ContextOrEnv looks a parameter up in the CDK context (`-c Name=value`, cdk.json), then in
// the environment under EnvName(name).
func ContextOrEnv(node constructs.Node, env Lookup) Lookup {
	return func(name string) (string, bool) {
		if v := node.TryGetContext(jsii.String(name)); v != nil {
			switch v := v.(type) {
			case string:
				return v, true
			case []any:
				parts := make([]string, 0, len(v))
				for _, e := range v {
					parts = append(parts, fmt.Sprint(e))
				}
				return strings.Join(parts, ","), true
			default:
				return fmt.Sprint(v), true
			}
		}
		return env(EnvName(name))
	}
}
