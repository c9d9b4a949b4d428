package berthstack

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/fleetshard"
)

// Props are a deployment's choices: the CDK twin of template.yaml's Parameters, with the same
// names (as context keys) and defaults, so one stack can be deployed either way with the same
// settings. Durations are whole seconds, as the template's parameters are.
type Props struct {
	// TablePrefix starts the six table names (store.table_prefix). Defaults to config's.
	TablePrefix string
	// JWTIssuer is the issuer URL of an existing OpenID Connect provider whose tokens the API
	// accepts. Empty means the stack creates a Cognito user pool, an app client and the admin
	// group, and trusts that pool. Defaults to "".
	JWTIssuer string
	// JWTAudience lists the audiences (client ids) accepted with JWTIssuer; required with it.
	JWTAudience []string
	// AdminClaim is the JWT claim that lists the caller's groups (auth.admin_claim). Defaults to
	// config's.
	AdminClaim string
	// AdminGroup is the group whose members are administrators (auth.admin_group). Defaults to
	// config's.
	AdminGroup string
	// CreateQueueMaxConcurrency is container.create_queue_max_concurrency: both the create
	// worker's reserved concurrency and its queue mapping's maximum concurrency. Defaults to
	// config's.
	CreateQueueMaxConcurrency int
	// CreateQueueMaxPending is container.create_queue_max_pending. Defaults to config's.
	CreateQueueMaxPending int
	// LifecycleQueueMaxConcurrency is the lifecycle worker's queue mapping's maximum
	// concurrency: the starts, stops and deletes run at once, what a burst of them may take of
	// the account's unreserved concurrency (2..1000, AWS's range). Defaults to
	// DefaultLifecycleQueueMaxConcurrency.
	LifecycleQueueMaxConcurrency int
	// UserPoolMfa is the stack's Cognito pool's MfaConfiguration: one of UserPoolMfaChoices.
	// Defaults to "OPTIONAL".
	UserPoolMfa string
	// UserPoolThreatProtection is the stack's Cognito pool's threat protection
	// (UserPoolAddOns.AdvancedSecurityMode): one of UserPoolThreatProtectionChoices. Other than
	// "OFF", it puts the pool on the Plus feature plan. Defaults to "OFF".
	UserPoolThreatProtection string
	// UseReservedConcurrency reserves the create worker's concurrency (CreateQueueMaxConcurrency)
	// and the reconciler's (1). Off, the stack deploys into an account whose quota cannot spare
	// them (Lambda keeps 100 executions unreserved), and the create mapping's maximum
	// concurrency holds the create limit (docs/deploy.md). Defaults to true.
	UseReservedConcurrency bool
	// CreateStartTimeoutSeconds is container.create_start_timeout; one of
	// CreateStartTimeoutChoices, from which the workers' timeouts and the queues' visibility
	// follow. Defaults to config's.
	CreateStartTimeoutSeconds int
	// MaxAttempts is container.max_attempts: the queues' maxReceiveCount. Defaults to config's.
	MaxAttempts int
	// StopGracePeriodSeconds is container.stop_grace_period (0..60). Defaults to config's.
	StopGracePeriodSeconds int
	// OutboxSweepAfterSeconds is container.outbox_sweep_after. Defaults to config's.
	OutboxSweepAfterSeconds int
	// OrphanGraceSeconds is container.orphan_grace. Defaults to config's.
	OrphanGraceSeconds int
	// ReconcileSchedule is the reconciler's EventBridge Scheduler expression: the bound on
	// noticing a container that exits by itself. Defaults to DefaultReconcileSchedule.
	ReconcileSchedule string
	// RuntimeWatcher runs the watcher function (WatcherFunction, with its schedule): the
	// runtimes' events reach the state loop within about a second instead of at the next
	// reconcile pass. Off, nothing of it is deployed (docs/cost.md). Defaults to true.
	RuntimeWatcher bool
	// FleetShards is fleet.shards, the reconciler's and the watcher's: how many shards they
	// split the fleet into, one invocation each through their shard queues (0..
	// fleetshard.Buckets; 0 is one per fleetshard.DefaultNodesPerShard nodes). Other than 1,
	// the two functions reserve no concurrency: a fanned-out tick runs its shards at once.
	// Defaults to config's (0).
	FleetShards int
	// AllowedRuntimes is container.allowed_runtimes, comma-separated; one of
	// AllowedRuntimesChoices. Defaults to config's.
	AllowedRuntimes string
	// WorkspaceRoot is container.workspace_root on the Docker hosts. Defaults to config's.
	WorkspaceRoot string
	// ConfigParameterName is the SSM String parameter (a name starting with /) holding the
	// deployment's non-secret config.yml document; the api, the workers and the reconciler
	// read version ConfigVersion of it. Defaults to "" (none).
	ConfigParameterName string
	// ConfigVersion is the version of ConfigParameterName the functions read. Defaults to
	// DefaultConfigVersion.
	ConfigVersion int
	// RuntimeConfigSecretArn is a Secrets Manager secret holding the secret material of the
	// configuration (docker.hosts[].tls by host name, docker.registries; without
	// ConfigParameterName the whole document); only the workers and the reconciler may read
	// it. Defaults to "" (none).
	RuntimeConfigSecretArn string
	// EksClusterArns are the EKS clusters kubernetes.clusters reaches through eks_cluster: the
	// workers and the reconciler may call eks:DescribeCluster on these only. Defaults to none.
	EksClusterArns []string
	// SecretsParameterPath is the SSM Parameter Store path under which templates' secret_env
	// names live as SecureStrings; only the two workers read it. Defaults to
	// DefaultSecretsParameterPath.
	SecretsParameterPath string
	// EcrRepositoryArns are the ECR repositories templates pull from: a Docker host pulls with
	// a token the workers fetch with their own role, so the role reads these repositories.
	// Defaults to none.
	EcrRepositoryArns []string
	// SubnetIDs and SecurityGroupIDs put the functions that reach Docker hosts (workers,
	// reconciler) in a VPC; no subnets means no VPC. Defaults to none.
	SubnetIDs        []string
	SecurityGroupIDs []string
	// DeletionProtection turns on the tables' deletion protection. Defaults to true.
	DeletionProtection bool
	// LogRetentionDays is the retention of every log group; one CloudWatch Logs accepts.
	// Defaults to DefaultLogRetentionDays.
	LogRetentionDays int
	// AlarmTopicARN is an SNS topic the alarms notify; empty means the stack creates one
	// (encrypted with a key of its own that CloudWatch may use) and the alarms notify that.
	AlarmTopicARN string
	// BackupPlan puts the six tables in an AWS Backup plan of the stack's own (a daily backup
	// kept BackupRetentionDays, in a vault of its own): opt-in, as backups are billed by the
	// GB-month (samconfig.toml's prod turns it on). Defaults to false.
	BackupPlan bool
	// BackupRetentionDays is how long each daily backup is kept (1..36500). Defaults to
	// DefaultBackupRetentionDays.
	BackupRetentionDays int
	// LogsKmsKeyArn is a customer-managed KMS key every log group is encrypted with; its
	// policy must let logs.<region>.amazonaws.com use it. Empty means CloudWatch Logs' own
	// encryption. Defaults to "".
	LogsKmsKeyArn string
	// CreateLogsKmsKey, without LogsKmsKeyArn, makes a customer-managed key for the log groups
	// (rotated yearly; its policy lets CloudWatch Logs of the stack's region use it for this
	// account's log groups) and encrypts every log group with it. Defaults to false.
	CreateLogsKmsKey bool
	// EventBusName is the EventBridge bus (a name in the stack's account and region) every
	// status change is put on; only the notify function may put events, on it only. Defaults
	// to DefaultEventBusName.
	EventBusName string
	// DistDir holds <fn>/bootstrap for every function, what `make build` writes. Not a template
	// parameter: SAM builds the code itself. Defaults to DefaultDistDir.
	DistDir string

	// net is the VPC placement New makes from SubnetIDs and SecurityGroupIDs, for the
	// functions that reach the runtimes.
	net *deploymentNet
	// logsKey is the key every log group is encrypted with (LogsKmsKeyArn, or the stack's own
	// with CreateLogsKmsKey); nil for CloudWatch Logs' own encryption.
	logsKey *string
}

// DefaultReconcileSchedule runs the reconciler once a minute.
const DefaultReconcileSchedule = "rate(1 minute)"

// DefaultLifecycleQueueMaxConcurrency lets ten starts, stops or deletes run at once: as many
// as NotifyMaxConcurrency deliveries, so that together they leave most of the account's
// unreserved concurrency (at least 100) to the api function.
const DefaultLifecycleQueueMaxConcurrency = 10

// DefaultBackupRetentionDays keeps a month of daily backups (DynamoDB's point-in-time recovery
// covers the last 35 days within the table; a backup outlives the table).
const DefaultBackupRetentionDays = 35

// DefaultLogRetentionDays keeps logs for a month: long enough to look into a failure reported
// late, bounded so logs do not grow forever.
const DefaultLogRetentionDays = 30

// DefaultSecretsParameterPath is the template's default parameter path for templates'
// secrets: a folder of its own under the configuration's /berth/.
const DefaultSecretsParameterPath = "/berth/secrets/"

// DefaultEventBusName is the account's default event bus.
const DefaultEventBusName = "default"

// eventBusNameRE is what EventBridge accepts as a bus name.
var eventBusNameRE = regexp.MustCompile(`^[/\.\-_A-Za-z0-9]{1,256}$`)

// DefaultDistDir is where `make build` leaves the function binaries, seen from infra/.
const DefaultDistDir = "../dist"

// CreateStartTimeoutChoices are the create_start_timeout values a stack accepts: each gives a
// worker timeout under Lambda's 15-minute limit (see WorkerTimeout).
var CreateStartTimeoutChoices = []int{60, 120, 180, 300, 600, 840}

// UserPoolMfaChoices are the values of UserPoolMfa: MFA offered, or required.
var UserPoolMfaChoices = []string{"OPTIONAL", "ON"}

// UserPoolThreatProtectionChoices are the values of UserPoolThreatProtection: off, risks
// logged, risks acted upon.
var UserPoolThreatProtectionChoices = []string{"OFF", "AUDIT", "ENFORCED"}

// AllowedRuntimesChoices are the values of AllowedRuntimes.
var AllowedRuntimesChoices = []string{"docker", "kubernetes", "docker,kubernetes"}

// logRetentionChoices are the retentions CloudWatch Logs accepts.
var logRetentionChoices = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}

// DefaultProps are template.yaml's parameter defaults, taken from berth's configuration defaults.
func DefaultProps() Props {
	c := config.Default()
	return Props{
		TablePrefix:                  c.Store.TablePrefix,
		AdminClaim:                   c.Auth.AdminClaim,
		AdminGroup:                   c.Auth.AdminGroup,
		CreateQueueMaxConcurrency:    c.Container.CreateQueueMaxConcurrency,
		CreateQueueMaxPending:        c.Container.CreateQueueMaxPending,
		LifecycleQueueMaxConcurrency: DefaultLifecycleQueueMaxConcurrency,
		BackupRetentionDays:          DefaultBackupRetentionDays,
		UseReservedConcurrency:       true,
		UserPoolMfa:                  "OPTIONAL",
		UserPoolThreatProtection:     "OFF",
		CreateStartTimeoutSeconds:    int(c.Container.CreateStartTimeout.Seconds()),
		MaxAttempts:                  c.Container.MaxAttempts,
		StopGracePeriodSeconds:       int(c.Container.StopGracePeriod.Seconds()),
		OutboxSweepAfterSeconds:      int(c.Container.OutboxSweepAfter.Seconds()),
		OrphanGraceSeconds:           int(c.Container.OrphanGrace.Seconds()),
		ReconcileSchedule:            DefaultReconcileSchedule,
		RuntimeWatcher:               true,
		FleetShards:                  c.Fleet.Shards,
		AllowedRuntimes:              strings.Join(c.Container.AllowedRuntimes, ","),
		WorkspaceRoot:                c.Container.WorkspaceRoot,
		SecretsParameterPath:         DefaultSecretsParameterPath,
		ConfigVersion:                DefaultConfigVersion,
		DeletionProtection:           true,
		LogRetentionDays:             DefaultLogRetentionDays,
		EventBusName:                 DefaultEventBusName,
		DistDir:                      DefaultDistDir,
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
	ParamTablePrefix                  = "TablePrefix"
	ParamJWTIssuer                    = "JwtIssuer"
	ParamJWTAudience                  = "JwtAudience"
	ParamAdminClaim                   = "AdminClaim"
	ParamAdminGroup                   = "AdminGroup"
	ParamCreateQueueMaxConcurrency    = "CreateQueueMaxConcurrency"
	ParamCreateQueueMaxPending        = "CreateQueueMaxPending"
	ParamLifecycleQueueMaxConcurrency = "LifecycleQueueMaxConcurrency"
	ParamBackupPlan                   = "BackupPlan"
	ParamBackupRetentionDays          = "BackupRetentionDays"
	ParamLogsKmsKeyArn                = "LogsKmsKeyArn"
	ParamCreateLogsKmsKey             = "CreateLogsKmsKey"
	ParamUseReservedConcurrency       = "UseReservedConcurrency"
	ParamUserPoolMfa                  = "UserPoolMfa"
	ParamUserPoolThreatProtection     = "UserPoolThreatProtection"
	ParamCreateStartTimeoutSeconds    = "CreateStartTimeoutSeconds"
	ParamMaxAttempts                  = "MaxAttempts"
	ParamStopGracePeriodSeconds       = "StopGracePeriodSeconds"
	ParamOutboxSweepAfterSeconds      = "OutboxSweepAfterSeconds"
	ParamOrphanGraceSeconds           = "OrphanGraceSeconds"
	ParamReconcileSchedule            = "ReconcileScheduleExpression"
	ParamRuntimeWatcher               = "RuntimeWatcher"
	ParamFleetShards                  = "FleetShards"
	ParamAllowedRuntimes              = "AllowedRuntimes"
	ParamWorkspaceRoot                = "WorkspaceRoot"
	ParamRuntimeConfigSecretArn       = "RuntimeConfigSecretArn"
	ParamConfigParameterName          = "ConfigParameterName"
	ParamConfigVersion                = "ConfigVersion"
	ParamEcrRepositoryArns            = "EcrRepositoryArns"
	ParamEksClusterArns               = "EksClusterArns"
	ParamSecretsParameterPath         = "SecretsParameterPath"
	ParamSubnetIDs                    = "SubnetIds"
	ParamSecurityGroupIDs             = "SecurityGroupIds"
	ParamDeletionProtection           = "DeletionProtection"
	ParamLogRetentionDays             = "LogRetentionDays"
	ParamAlarmTopicARN                = "AlarmTopicArn"
	ParamEventBusName                 = "EventBusName"
	ParamDistDir                      = "DistDir"
)

// ParamNames are the template parameters Props mirror: every one of template.yaml's (a test
// holds the two lists equal). DistDir is the CDK app's own.
func ParamNames() []string {
	return []string{ParamTablePrefix, ParamJWTIssuer, ParamJWTAudience, ParamAdminClaim, ParamAdminGroup,
		ParamCreateQueueMaxConcurrency, ParamCreateQueueMaxPending, ParamCreateStartTimeoutSeconds, ParamMaxAttempts,
		ParamStopGracePeriodSeconds, ParamOutboxSweepAfterSeconds, ParamOrphanGraceSeconds, ParamReconcileSchedule,
		ParamAllowedRuntimes, ParamWorkspaceRoot, ParamConfigParameterName, ParamConfigVersion, ParamRuntimeConfigSecretArn, ParamEksClusterArns, ParamSecretsParameterPath, ParamEcrRepositoryArns, ParamSubnetIDs,
		ParamSecurityGroupIDs, ParamDeletionProtection, ParamLogRetentionDays, ParamAlarmTopicARN,
		ParamUseReservedConcurrency, ParamUserPoolMfa, ParamRuntimeWatcher, ParamUserPoolThreatProtection,
		ParamEventBusName, ParamLifecycleQueueMaxConcurrency, ParamBackupPlan, ParamBackupRetentionDays, ParamLogsKmsKeyArn, ParamCreateLogsKmsKey,
		ParamFleetShards}
}

var configParameterRE = regexp.MustCompile(`^/[A-Za-z0-9_./-]+$`)

// DefaultConfigVersion is Props.ConfigVersion's default: a parameter's first version.
const DefaultConfigVersion = 1

var parameterPathRE = regexp.MustCompile(`^/[A-Za-z0-9_./-]*/$`)

var tablePrefixRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,200}$`)

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
	str(ParamTablePrefix, &p.TablePrefix)
	str(ParamJWTIssuer, &p.JWTIssuer)
	list(ParamJWTAudience, &p.JWTAudience)
	str(ParamAdminClaim, &p.AdminClaim)
	str(ParamAdminGroup, &p.AdminGroup)
	integer(ParamCreateQueueMaxConcurrency, &p.CreateQueueMaxConcurrency)
	integer(ParamCreateQueueMaxPending, &p.CreateQueueMaxPending)
	integer(ParamLifecycleQueueMaxConcurrency, &p.LifecycleQueueMaxConcurrency)
	boolean(ParamUseReservedConcurrency, &p.UseReservedConcurrency)
	str(ParamUserPoolMfa, &p.UserPoolMfa)
	str(ParamUserPoolThreatProtection, &p.UserPoolThreatProtection)
	integer(ParamCreateStartTimeoutSeconds, &p.CreateStartTimeoutSeconds)
	integer(ParamMaxAttempts, &p.MaxAttempts)
	integer(ParamStopGracePeriodSeconds, &p.StopGracePeriodSeconds)
	integer(ParamOutboxSweepAfterSeconds, &p.OutboxSweepAfterSeconds)
	integer(ParamOrphanGraceSeconds, &p.OrphanGraceSeconds)
	str(ParamReconcileSchedule, &p.ReconcileSchedule)
	boolean(ParamRuntimeWatcher, &p.RuntimeWatcher)
	integer(ParamFleetShards, &p.FleetShards)
	str(ParamAllowedRuntimes, &p.AllowedRuntimes)
	str(ParamWorkspaceRoot, &p.WorkspaceRoot)
	str(ParamConfigParameterName, &p.ConfigParameterName)
	integer(ParamConfigVersion, &p.ConfigVersion)
	str(ParamRuntimeConfigSecretArn, &p.RuntimeConfigSecretArn)
	list(ParamEcrRepositoryArns, &p.EcrRepositoryArns)
	list(ParamEksClusterArns, &p.EksClusterArns)
	str(ParamSecretsParameterPath, &p.SecretsParameterPath)
	list(ParamSubnetIDs, &p.SubnetIDs)
	list(ParamSecurityGroupIDs, &p.SecurityGroupIDs)
	boolean(ParamDeletionProtection, &p.DeletionProtection)
	integer(ParamLogRetentionDays, &p.LogRetentionDays)
	str(ParamAlarmTopicARN, &p.AlarmTopicARN)
	boolean(ParamBackupPlan, &p.BackupPlan)
	integer(ParamBackupRetentionDays, &p.BackupRetentionDays)
	str(ParamLogsKmsKeyArn, &p.LogsKmsKeyArn)
	boolean(ParamCreateLogsKmsKey, &p.CreateLogsKmsKey)
	str(ParamEventBusName, &p.EventBusName)
	str(ParamDistDir, &p.DistDir)
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	return p, p.Validate()
}

// Validate reports every setting that cannot make a working stack, with the template's own
// constraints.
func (p Props) Validate() error {
	var errs []error
	bad := func(name string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}
	if !tablePrefixRE.MatchString(p.TablePrefix) {
		bad(ParamTablePrefix, "%q: 1 to 200 of A-Z a-z 0-9 _ . -", p.TablePrefix)
	}
	if p.JWTIssuer != "" {
		if u, err := url.Parse(p.JWTIssuer); err != nil || u.Scheme != "https" || u.Host == "" {
			bad(ParamJWTIssuer, "%q is not an https URL", p.JWTIssuer)
		}
		if len(p.JWTAudience) == 0 {
			bad(ParamJWTAudience, "required with %s (the client ids the tokens are issued to)", ParamJWTIssuer)
		}
	}
	if p.AdminClaim == "" {
		bad(ParamAdminClaim, "empty")
	}
	if n := len([]rune(p.AdminGroup)); n < 1 || n > 128 || strings.ContainsAny(p.AdminGroup, " \t\n") {
		bad(ParamAdminGroup, "%q: 1 to 128 characters without spaces", p.AdminGroup)
	}
	if p.CreateQueueMaxConcurrency < 1 || p.CreateQueueMaxConcurrency > 1000 {
		bad(ParamCreateQueueMaxConcurrency, "%d is outside 1..1000", p.CreateQueueMaxConcurrency)
	}
	if p.LifecycleQueueMaxConcurrency < MinSQSMaxConcurrency || p.LifecycleQueueMaxConcurrency > 1000 {
		bad(ParamLifecycleQueueMaxConcurrency, "%d is outside %d..1000 (an SQS mapping's maximum concurrency)", p.LifecycleQueueMaxConcurrency, MinSQSMaxConcurrency)
	}
	if !slices.Contains(UserPoolMfaChoices, p.UserPoolMfa) {
		bad(ParamUserPoolMfa, "%q is not one of %q", p.UserPoolMfa, UserPoolMfaChoices)
	}
	if !slices.Contains(UserPoolThreatProtectionChoices, p.UserPoolThreatProtection) {
		bad(ParamUserPoolThreatProtection, "%q is not one of %q", p.UserPoolThreatProtection, UserPoolThreatProtectionChoices)
	}
	if p.CreateQueueMaxPending < 1 {
		bad(ParamCreateQueueMaxPending, "%d is below 1", p.CreateQueueMaxPending)
	}
	if !slices.Contains(CreateStartTimeoutChoices, p.CreateStartTimeoutSeconds) {
		bad(ParamCreateStartTimeoutSeconds, "%d is not one of %v", p.CreateStartTimeoutSeconds, CreateStartTimeoutChoices)
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > 1000 {
		bad(ParamMaxAttempts, "%d is outside 1..1000 (SQS maxReceiveCount)", p.MaxAttempts)
	}
	if p.StopGracePeriodSeconds < 0 || p.StopGracePeriodSeconds > 60 {
		bad(ParamStopGracePeriodSeconds, "%d is outside 0..60", p.StopGracePeriodSeconds)
	}
	if p.OutboxSweepAfterSeconds < 1 {
		bad(ParamOutboxSweepAfterSeconds, "%d is below 1", p.OutboxSweepAfterSeconds)
	}
	if p.OrphanGraceSeconds < 0 {
		bad(ParamOrphanGraceSeconds, "%d is below 0", p.OrphanGraceSeconds)
	}
	if !scheduleRE.MatchString(p.ReconcileSchedule) {
		bad(ParamReconcileSchedule, "%q is not rate(N unit), cron(...) or at(...)", p.ReconcileSchedule)
	}
	if p.FleetShards < 0 || p.FleetShards > fleetshard.Buckets {
		bad(ParamFleetShards, "%d is outside 0..%d", p.FleetShards, fleetshard.Buckets)
	}
	if !slices.Contains(AllowedRuntimesChoices, p.AllowedRuntimes) {
		bad(ParamAllowedRuntimes, "%q is not one of %q", p.AllowedRuntimes, AllowedRuntimesChoices)
	}
	if !strings.HasPrefix(p.WorkspaceRoot, "/") {
		bad(ParamWorkspaceRoot, "%q is not an absolute path", p.WorkspaceRoot)
	}
	if p.ConfigParameterName != "" && !configParameterRE.MatchString(p.ConfigParameterName) {
		bad(ParamConfigParameterName, "%q is not a parameter name starting with /", p.ConfigParameterName)
	}
	if p.ConfigVersion < 1 {
		bad(ParamConfigVersion, "%d is below 1", p.ConfigVersion)
	}
	if p.RuntimeConfigSecretArn != "" && !strings.HasPrefix(p.RuntimeConfigSecretArn, "arn:") {
		bad(ParamRuntimeConfigSecretArn, "%q is not an ARN", p.RuntimeConfigSecretArn)
	}
	if !eventBusNameRE.MatchString(p.EventBusName) {
		bad(ParamEventBusName, "%q is not an event bus name", p.EventBusName)
	}
	if !parameterPathRE.MatchString(p.SecretsParameterPath) {
		bad(ParamSecretsParameterPath, "%q is not a parameter path (/.../)", p.SecretsParameterPath)
	}
	for _, arn := range p.EksClusterArns {
		if !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":eks:") || !strings.Contains(arn, ":cluster/") {
			bad(ParamEksClusterArns, "%q is not an EKS cluster ARN", arn)
		}
	}
	for _, arn := range p.EcrRepositoryArns {
		if !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":ecr:") {
			bad(ParamEcrRepositoryArns, "%q is not an ECR repository ARN", arn)
		}
	}
	if len(p.SubnetIDs) > 0 && len(p.SecurityGroupIDs) == 0 {
		bad(ParamSecurityGroupIDs, "required with %s", ParamSubnetIDs)
	}
	if !slices.Contains(logRetentionChoices, p.LogRetentionDays) {
		bad(ParamLogRetentionDays, "%d is not a retention CloudWatch Logs accepts (%v)", p.LogRetentionDays, logRetentionChoices)
	}
	if p.AlarmTopicARN != "" && !strings.HasPrefix(p.AlarmTopicARN, "arn:") {
		bad(ParamAlarmTopicARN, "%q is not an ARN", p.AlarmTopicARN)
	}
	if p.BackupRetentionDays < 1 || p.BackupRetentionDays > 36500 {
		bad(ParamBackupRetentionDays, "%d is outside 1..36500", p.BackupRetentionDays)
	}
	if p.LogsKmsKeyArn != "" && (!strings.HasPrefix(p.LogsKmsKeyArn, "arn:") || !strings.Contains(p.LogsKmsKeyArn, ":kms:")) {
		bad(ParamLogsKmsKeyArn, "%q is not a KMS key ARN", p.LogsKmsKeyArn)
	}
	if p.DistDir == "" {
		bad(ParamDistDir, "empty")
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
