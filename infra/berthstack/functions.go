package berthstack

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// functionSpec is one Lambda function: which binary, and the settings that carry guarantees.
type functionSpec struct {
	// id is the construct id, the SAM template's logical id (ApiFunction, ...).
	id string
	// binary is the directory under dist/ that holds its bootstrap (functions/<binary>).
	binary  string
	timeout time.Duration
	memory  int
	// reserved is the reserved concurrency; 0 leaves the function on the account's pool.
	reserved int
	// inVPC puts the function in the deployment's subnets (those that reach Docker hosts or clusters).
	inVPC bool
	env   map[string]*string
}

// Function settings every berth function shares: the decisions of the architecture
// (provided.al2023 custom runtime, arm64, binary named bootstrap).
var (
	functionRuntime      = awslambda.Runtime_PROVIDED_AL2023()
	functionArchitecture = awslambda.Architecture_ARM_64()
)

const (
	functionHandler = "bootstrap"
	// logRetention keeps function logs for a month: long enough to investigate a failed
	// create reported late, bounded so logs do not grow forever.
	logRetention = awslogs.RetentionDays_ONE_MONTH
)

// newFunction builds one function from dist/<binary>/bootstrap. A missing binary is an error
// naming `make build`, not a synth that uploads an empty asset.
func newFunction(scope constructs.Construct, p Props, spec functionSpec) (awslambda.Function, error) {
	dir := filepath.Join(p.DistDir, spec.binary)
	if _, err := os.Stat(filepath.Join(dir, functionHandler)); err != nil {
		return nil, fmt.Errorf("%s: no %s in %s (run `make build` at the repository root): %w", spec.id, functionHandler, dir, err)
	}
	props := &awslambda.FunctionProps{
		Runtime:      functionRuntime,
		Architecture: functionArchitecture,
		Handler:      jsii.String(functionHandler),
		Code:         awslambda.Code_FromAsset(jsii.String(dir), nil),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(spec.timeout.Seconds())),
		MemorySize:   jsii.Number(spec.memory),
		Environment:  &spec.env,
		LogGroup: awslogs.NewLogGroup(scope, jsii.String(spec.id+"Logs"), &awslogs.LogGroupProps{
			Retention:     logRetention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}),
	}
	if spec.reserved > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(spec.reserved)
	}
	fn := awslambda.NewFunction(scope, jsii.String(spec.id), props)
	if spec.inVPC && len(p.SubnetIDs) > 0 {
		placeInVPC(fn, p)
	}
	return fn, nil
}

// placeInVPC attaches the function to the given subnets and security groups by id. The L2
// VPC props need a looked-up VPC (an account call at synth); ids keep synth offline, as
// template.yaml's VpcConfig does.
func placeInVPC(fn awslambda.Function, p Props) {
	cfn := fn.Node().DefaultChild().(awslambda.CfnFunction)
	cfn.AddPropertyOverride(jsii.String("VpcConfig"), map[string]any{
		"SubnetIds":        p.SubnetIDs,
		"SecurityGroupIds": p.SecurityGroupIDs,
	})
	fn.Role().AddManagedPolicy(awsiamManagedPolicy("service-role/AWSLambdaVPCAccessExecutionRole"))
}
