package berthstack

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// functionSpec is one Lambda function: which binary, and the settings that carry guarantees.
type functionSpec struct {
	// id is the construct id: template.yaml's logical id (ApiFunction, ...).
	id string
	// binary is the directory under DistDir that holds its bootstrap (functions/<binary>).
	binary      string
	description string
	timeout     time.Duration
	// reserved is the reserved concurrency; 0 leaves the function on the account's pool.
	reserved int
	// memoryMB is the function's memory; 0 is FunctionMemoryMB.
	memoryMB int
	// inVPC puts the function in the deployment's subnets, if any: the functions that reach
	// Docker hosts.
	inVPC bool
	// env is added to the variables every function gets (commonEnv).
	env map[string]*string
	// statements are the function's own permissions, beyond writing its logs and traces.
	statements []awsiam.PolicyStatement
}

// Managed policies every function's role has: logs and X-Ray traces.
var baseManagedPolicies = []string{"service-role/AWSLambdaBasicExecutionRole", "AWSXrayWriteOnlyAccess"}

// managedVPCAccess lets a function in a VPC manage its network interfaces.
const managedVPCAccess = "service-role/AWSLambdaVPCAccessExecutionRole"

const functionHandler = "bootstrap"

// newFunction builds one function from DistDir/<binary>/bootstrap, with its own role (the
// managed policies plus one inline policy of spec.statements) and its own log group. A
// missing binary is an error naming `make build`, not a synth that uploads an empty asset.
func newFunction(scope constructs.Construct, p Props, common map[string]*string, spec functionSpec) (awslambda.Function, error) {
	dir := filepath.Join(p.DistDir, spec.binary)
	if _, err := os.Stat(filepath.Join(dir, functionHandler)); err != nil {
		return nil, fmt.Errorf("%s: no %s in %s (run `make build` at the repository root): %w", spec.id, functionHandler, dir, err)
	}
	vpc := spec.inVPC && p.net != nil
	managed := append([]string{}, baseManagedPolicies...)
	if vpc {
		// Only in a VPC, as template.yaml's written-out roles have it (HasVpc).
		managed = append(managed, managedVPCAccess)
	}
	var policies []awsiam.IManagedPolicy
	for _, name := range managed {
		policies = append(policies, awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String(name)))
	}
	roleProps := &awsiam.RoleProps{
		AssumedBy:       awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		ManagedPolicies: &policies,
	}
	if len(spec.statements) > 0 {
		roleProps.InlinePolicies = &map[string]awsiam.PolicyDocument{
			"Policy0": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &spec.statements}),
		}
	}
	role := awsiam.NewRole(scope, jsii.String(spec.id+"Role"), roleProps)

	env := merge(common, spec.env)
	props := &awslambda.FunctionProps{
		Description:  jsii.String(spec.description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String(functionHandler),
		Code:         awslambda.Code_FromAsset(jsii.String(dir), nil),
		Timeout:      seconds(spec.timeout),
		MemorySize:   jsii.Number(cmp.Or(spec.memoryMB, FunctionMemoryMB)),
		Environment:  &env,
		// The role as it is: the construct would add X-Ray statements for Tracing (the
		// managed policy above has them) and the VPC access policy for Vpc (added above, as
		// template.yaml's written-out roles have it).
		Role: role.WithoutPolicyUpdates(nil),
		// Set on the construct, not as property overrides, so that construct-level checks
		// (cdk-nag's tracing and VPC rules) see them.
		Tracing: awslambda.Tracing_ACTIVE,
	}
	if spec.reserved > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(spec.reserved)
	}
	if vpc {
		props.Vpc, props.VpcSubnets, props.SecurityGroups = p.net.vpc, p.net.subnets, p.net.groups
	}
	fn := awslambda.NewFunction(scope, jsii.String(spec.id), props)
	// The function's own log group (/aws/lambda/<name>), made here so that it has a retention
	// and goes with the stack.
	lg := newLogGroup(scope, jsii.String(spec.id+"Logs"), p)
	lg.Node().DefaultChild().(awslogs.CfnLogGroup).SetLogGroupName(jsii.String("/aws/lambda/" + *fn.FunctionName()))
	return fn, nil
}

// deploymentNet is the deployment's subnets and security groups as constructs, by id: looking
// the VPC up would be an account call at synth. A function's VpcConfig names only subnets and
// security groups, so the VPC here only holds them (its id and zone are written nowhere).
type deploymentNet struct {
	vpc     awsec2.IVpc
	subnets *awsec2.SubnetSelection
	groups  *[]awsec2.ISecurityGroup
}

// newDeploymentNet makes p's network constructs under scope; nil without subnets.
func newDeploymentNet(scope constructs.Construct, p Props) *deploymentNet {
	if len(p.SubnetIDs) == 0 {
		return nil
	}
	holder := constructs.NewConstruct(scope, jsii.String("DeploymentVpc"))
	n := &deploymentNet{vpc: awsec2.Vpc_FromVpcAttributes(holder, jsii.String("Vpc"), &awsec2.VpcAttributes{
		VpcId:             jsii.String("vpc-of-the-subnets"),
		AvailabilityZones: jsii.Strings("zone-of-the-subnets"),
	})}
	var subnets []awsec2.ISubnet
	for _, id := range p.SubnetIDs {
		subnets = append(subnets, awsec2.Subnet_FromSubnetId(holder, jsii.String(id), jsii.String(id)))
	}
	var groups []awsec2.ISecurityGroup
	for _, id := range p.SecurityGroupIDs {
		groups = append(groups, awsec2.SecurityGroup_FromSecurityGroupId(holder, jsii.String(id), jsii.String(id),
			&awsec2.SecurityGroupImportOptions{Mutable: jsii.Bool(false)}))
	}
	n.subnets, n.groups = &awsec2.SubnetSelection{Subnets: &subnets}, &groups
	return n
}

// allow is one Allow statement.
func allow(actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	})
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

// newLogGroup is a log group with the deployment's retention and key (newLogsKey),
// deleted with the stack (as template.yaml's are).
func newLogGroup(scope constructs.Construct, id *string, p Props) awslogs.LogGroup {
	lg := awslogs.NewLogGroup(scope, id, &awslogs.LogGroupProps{RemovalPolicy: awscdk.RemovalPolicy_DESTROY})
	// By number: the construct's retention is an enum of names.
	cfn := lg.Node().DefaultChild().(awslogs.CfnLogGroup)
	cfn.SetRetentionInDays(jsii.Number(p.LogRetentionDays))
	if p.logsKey != nil {
		cfn.SetKmsKeyId(p.logsKey)
	}
	return lg
}
