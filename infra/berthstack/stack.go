// Package berthstack is berth's AWS stack as CDK constructs: the same resources and settings as
// template.yaml, for teams that deploy with the CDK. Each construct is named for what it holds:
// Api (the HTTP API, its authorizer and the api function), Tables, Pipeline (the outbox stream's
// dispatcher and the queues), Workers, Reconciler (with its schedule) and Alarms.
package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Stack is berth's stack and its parts.
type Stack struct {
	awscdk.Stack
	API        *API
	Tables     *Tables
	Pipeline   *Pipeline
	Workers    *Workers
	Reconciler *Reconciler
	Alarms     *Alarms
}

// New builds the stack in scope. It fails on invalid props or when a function's binary is
// missing from p.DistDir.
func New(scope constructs.Construct, id string, stackProps *awscdk.StackProps, p Props) (*Stack, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if stackProps == nil {
		stackProps = &awscdk.StackProps{}
	}
	if stackProps.Description == nil {
		stackProps.Description = jsii.String("berth: container lifecycles on Lambda, DynamoDB and SQS")
	}
	s := &Stack{Stack: awscdk.NewStack(scope, jsii.String(id), stackProps)}
	s.Tables = newTables(s.Stack, p)
	rt := newRuntimeAccess(s.Stack)
	var err error
	if s.API, err = newAPI(s.Stack, p, s.Tables); err != nil {
		return nil, err
	}
	if s.Pipeline, err = newPipeline(s.Stack, p, s.Tables); err != nil {
		return nil, err
	}
	if s.Workers, err = newWorkers(s.Stack, p, s.Tables, s.Pipeline, rt); err != nil {
		return nil, err
	}
	if s.Reconciler, err = newReconciler(s.Stack, p, s.Tables, s.Pipeline, rt); err != nil {
		return nil, err
	}
	s.Alarms = newAlarms(s.Stack, p, s.Pipeline, s.Workers, s.Reconciler)

	awscdk.NewCfnOutput(s.Stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("BERTH_URL for the CLI"),
		Value:       s.API.HTTPAPI.ApiEndpoint(),
	})
	if s.API.UserPool != nil {
		awscdk.NewCfnOutput(s.Stack, jsii.String("UserPoolId"), &awscdk.CfnOutputProps{Value: s.API.UserPool.UserPoolId()})
		awscdk.NewCfnOutput(s.Stack, jsii.String("UserPoolClientId"), &awscdk.CfnOutputProps{Value: s.API.UserPoolClient.UserPoolClientId()})
	}
	return s, nil
}
