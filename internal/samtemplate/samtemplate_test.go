package samtemplate

import (
	"strings"
	"testing"
	"time"
)

const sample = `
Transform: AWS::Serverless-2016-10-31
Parameters:
  Attempts: {Type: Number, Default: 5}
  Issuer: {Type: String, Default: ""}
  Mode: {Type: String, Default: a, AllowedValues: [a, b]}
  Subnets: {Type: CommaDelimitedList, Default: ""}
Conditions:
  NoIssuer: !Equals [!Ref Issuer, ""]
  WithVpc: !Not [!Equals [!Join [",", !Ref Subnets], ""]]
Mappings:
  Sizes: {a: {mem: 512}}
Globals:
  Function:
    Timeout: 30
    MemorySize: !FindInMap [Sizes, !Ref Mode, mem]
    Environment:
      Variables:
        PREFIX: !Sub "${AWS::StackName}-"
        ATTEMPTS: !Ref Attempts
Resources:
  Pool:
    Type: AWS::Cognito::UserPool
    Condition: NoIssuer
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      Auth: {DefaultAuthorizer: Jwt}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Timeout: 60
      ReservedConcurrentExecutions: !Ref Attempts
      Environment:
        Variables:
          QUEUE: !Ref Work
          ISSUER: !If [NoIssuer, !Sub "https://idp/${Pool}", !Ref Issuer]
          VPC: !If [WithVpc, "yes", !Ref AWS::NoValue]
          LITERAL: !Sub "${!NotAVar}"
      Events:
        Http: {Type: HttpApi, Properties: {ApiId: !Ref Api, Path: "/{proxy+}", Method: ANY}}
        Stream:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Table.StreamArn
            StartingPosition: TRIM_HORIZON
            BatchSize: 10
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: 2
            FunctionResponseTypes: [ReportBatchItemFailures]
            FilterCriteria: {Filters: [{Pattern: '{"eventName":["INSERT"]}'}]}
            DestinationConfig: {OnFailure: {Type: SQS, Destination: !GetAtt Failed.Arn}}
        Queue:
          Type: SQS
          Properties:
            Queue: !GetAtt Work.Arn
            BatchSize: 1
            ScalingConfig: {MaximumConcurrency: !Ref Attempts}
        Tick: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(1 minute)}}
  Work:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 360
      RedrivePolicy: {deadLetterTargetArn: !GetAtt Dead.Arn, maxReceiveCount: !Ref Attempts}
  Dead: {Type: AWS::SQS::Queue}
  Failed: {Type: AWS::SQS::Queue, Properties: {QueueName: !Sub "${AWS::StackName}-failed"}}
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-outbox"
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(sample), Options{StackName: "st", Parameters: map[string]string{"Attempts": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	fn := s.Functions["Fn"]
	for k, want := range map[string]string{
		"PREFIX": "st-", "ATTEMPTS": "3", "QUEUE": "https://sqs.us-east-1.amazonaws.com/000000000000/st-Work",
		"ISSUER": "https://idp/st-Pool", "LITERAL": "${NotAVar}",
	} {
		if fn.Environment[k] != want {
			t.Errorf("env %s = %q, want %q", k, fn.Environment[k], want)
		}
	}
	if _, ok := fn.Environment["VPC"]; ok {
		t.Errorf("AWS::NoValue kept: %v", fn.Environment)
	}
	if fn.EnvironmentParameters["ATTEMPTS"] != (EnvParameter{Name: "Attempts"}) {
		t.Errorf("environment parameters %v", fn.EnvironmentParameters)
	}
	if fn.Timeout != time.Minute || fn.MemoryMB != 512 || fn.ReservedConcurrency != 3 || fn.CodeURI != "functions/fn" {
		t.Errorf("function %+v", fn)
	}
	w := s.Queues["Work"]
	if w.DeadLetter != "Dead" || w.MaxReceiveCount != 3 || w.VisibilityTimeout != 6*time.Minute || s.Queues["Failed"].Name != "st-failed" {
		t.Errorf("queues %+v %+v", w, s.Queues["Failed"])
	}
	if len(s.Streams) != 1 || len(s.QueueMaps) != 1 || len(s.Schedules) != 1 || len(s.Routes) != 1 {
		t.Fatalf("mappings: %d streams, %d queues, %d schedules, %d routes", len(s.Streams), len(s.QueueMaps), len(s.Schedules), len(s.Routes))
	}
	sm := s.Streams[0].Settings
	if s.Streams[0].Table != "Table" || sm.BatchSize != 10 || !sm.Bisect || sm.MaxRetries != 2 || sm.OnFailure != "Failed" ||
		!sm.ReportBatchItemFailures || len(sm.Filters) != 1 || sm.StartingPosition != "TRIM_HORIZON" {
		t.Errorf("stream mapping %+v", s.Streams[0])
	}
	qm := s.QueueMaps[0]
	if qm.Queue != "Work" || qm.Settings.BatchSize != 1 || qm.Settings.MaxConcurrency != 3 || qm.Settings.ReportBatchItemFailures {
		t.Errorf("queue mapping %+v", qm)
	}
	if r := s.Routes[0]; r.API != "Api" || !r.Authorized || r.Method != "ANY" || r.Path != "/{proxy+}" {
		t.Errorf("route %+v", r)
	}
	if sc := s.Schedules[0]; sc.Expression != "rate(1 minute)" || !sc.Enabled {
		t.Errorf("schedule %+v", sc)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, edit, param, want string
	}{
		{"unknown override", "", "Nope=1", "no such parameter"},
		{"not allowed", "", "Mode=c", "AllowedValues"},
		{"dangling ref", "QUEUE: !Ref Work", "", "no such parameter or resource"},
		{"unknown event", "Type: ScheduleV2", "", "not emulated"},
		{"dead letter outside", "deadLetterTargetArn: !GetAtt Dead.Arn", "", "not a queue of this template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := sample
			switch tc.name {
			case "dangling ref":
				tpl = strings.Replace(tpl, tc.edit, "QUEUE: !Ref Missing", 1)
			case "unknown event":
				tpl = strings.Replace(tpl, tc.edit, "Type: Kinesis", 1)
			case "dead letter outside":
				tpl = strings.Replace(tpl, tc.edit, "deadLetterTargetArn: arn:aws:sqs:us-east-1:1:elsewhere", 1)
			}
			opts := Options{}
			if tc.param != "" {
				k, v, _ := strings.Cut(tc.param, "=")
				opts.Parameters = map[string]string{k: v}
			}
			_, err := Parse([]byte(tpl), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
