package berthstack

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// API holds the HTTP API, its JWT authorizer, the api function behind it and, when no issuer
// is given, the Cognito user pool that issues the tokens.
type API struct {
	constructs.Construct
	HTTPAPI  awsapigatewayv2.HttpApi
	Function awslambda.Function
	// UserPool and UserPoolClient are nil with an external issuer.
	UserPool       awscognito.UserPool
	UserPoolClient awscognito.UserPoolClient
}

// accessLogFormat is the stage's access log line: JSON, with the request id that the api
// function's own log lines carry, and the caller (the JWT's sub), never the token.
var accessLogFormat = map[string]string{
	"requestId":          "$context.requestId",
	"ip":                 "$context.identity.sourceIp",
	"requestTime":        "$context.requestTime",
	"httpMethod":         "$context.httpMethod",
	"routeKey":           "$context.routeKey",
	"path":               "$context.path",
	"status":             "$context.status",
	"responseLength":     "$context.responseLength",
	"integrationLatency": "$context.integrationLatency",
	"integrationError":   "$context.integrationErrorMessage",
	"authorizerError":    "$context.authorizer.error",
	"sub":                "$context.authorizer.claims.sub",
}

func newAPI(scope constructs.Construct, p Props, tables *Tables) (*API, error) {
	a := &API{Construct: constructs.NewConstruct(scope, jsii.String("Api"))}
	fn, err := newFunction(a.Construct, p, functionSpec{
		id: "ApiFunction", binary: "api",
		timeout: APITimeout, memory: FunctionMemoryMB,
		env: merge(storeEnv(tables), containerEnv(p), map[string]*string{envAdminGroup: jsii.String(p.AdminGroup)}),
	})
	if err != nil {
		return nil, err
	}
	a.Function = fn
	// The api function writes the store (instance, outbox item, event in one transaction);
	// it never sends to a queue: the outbox is its only way to start work.
	allowStore(fn, tables)

	issuer, audience := jsii.String(p.JWTIssuer), jsii.Strings(p.JWTAudience...)
	if p.JWTIssuer == "" {
		a.newUserPool(p)
		issuer = jsii.String(fmt.Sprintf("https://cognito-idp.%s.amazonaws.com/%s", *awscdk.Aws_REGION(), *a.UserPool.UserPoolId()))
		audience = &[]*string{a.UserPoolClient.UserPoolClientId()}
	}
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), issuer,
		&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
			JwtAudience:    audience,
			IdentitySource: jsii.Strings("$request.header.Authorization"),
		})
	a.HTTPAPI = awsapigatewayv2.NewHttpApi(a.Construct, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:       jsii.String("berth API"),
		DefaultAuthorizer: authorizer,
	})
	a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String("/{proxy+}"),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), fn, nil),
	})

	logs := awslogs.NewLogGroup(a.Construct, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention:     logRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	format, err := json.Marshal(accessLogFormat)
	if err != nil {
		return nil, fmt.Errorf("access log format: %w", err)
	}
	stage := a.HTTPAPI.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(string(format)),
	})
	return a, nil
}

// newUserPool creates the stack's own identity provider: a user pool whose admins create the
// users (no self sign-up), an app client without a secret (a CLI cannot keep one), and the
// admin group.
func (a *API) newUserPool(p Props) {
	a.UserPool = awscognito.NewUserPool(a.Construct, jsii.String("UserPool"), &awscognito.UserPoolProps{
		SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true)},
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength: jsii.Number(12), RequireDigits: jsii.Bool(true), RequireLowercase: jsii.Bool(true),
			RequireUppercase: jsii.Bool(true), RequireSymbols: jsii.Bool(false),
		},
		AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
	})
	a.UserPoolClient = a.UserPool.AddClient(jsii.String("Client"), &awscognito.UserPoolClientOptions{
		GenerateSecret: jsii.Bool(false),
		AuthFlows:      &awscognito.AuthFlow{UserSrp: jsii.Bool(true), UserPassword: jsii.Bool(true)},
	})
	awscognito.NewCfnUserPoolGroup(a.Construct, jsii.String("AdminGroup"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId:  a.UserPool.UserPoolId(),
		GroupName:   jsii.String(p.AdminGroup),
		Description: jsii.String("berth admins: see every owner's containers, write templates"),
	})
}
