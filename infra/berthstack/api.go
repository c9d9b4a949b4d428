package berthstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// API holds the HTTP API, its JWT authorizer, the api function behind it and, when no issuer
// is given, the Cognito user pool, app client and admin group that issue the tokens.
type API struct {
	constructs.Construct
	HTTPAPI  awsapigatewayv2.HttpApi
	Function awslambda.Function
	// UserPool, UserPoolClient, ConsoleClient and UserPoolDomain are nil with an external
	// issuer.
	UserPool       awscognito.CfnUserPool
	UserPoolClient awscognito.CfnUserPoolClient
	// ConsoleClient is the web console's app client (code flow with PKCE, no secret), signing
	// in on UserPoolDomain's hosted pages.
	ConsoleClient  awscognito.CfnUserPoolClient
	UserPoolDomain awscognito.CfnUserPoolDomain
}

// ConsoleURL is the web console's address on the API, its app client's callback.
func (a *API) ConsoleURL() *string {
	return awscdk.Fn_Join(jsii.String(""), &[]*string{a.HTTPAPI.ApiEndpoint(), jsii.String("/console")})
}

// APIRoutePath is the route of every path but OpenAPIRoutePath's: each goes to the api function, which answers unknown
// ones with a problem+json 404.
const APIRoutePath = "/{proxy+}"

// OpenAPIRoutePath is a route without the authorizer: GET of the OpenAPI document.
const OpenAPIRoutePath = "/api/openapi.json"

// ProbeRoutePaths are the health probes without the authorizer (GET only; docs/api.md): a load
// balancer or an uptime check has no token, and they say ok/ready or not and nothing more. The
// detailed /healthz stays behind the authorizer under APIRoutePath.
var ProbeRoutePaths = []string{"/livez", "/readyz"}

// ConsoleRoutePaths are the web console's routes without the authorizer (GET only): its static
// files (internal/console) hold no user data, and the page sends the token it signs in for to
// the API routes, which keep the authorizer. GET / sends a browser to /console.
var ConsoleRoutePaths = []string{"/", "/console", "/console/{proxy+}"}

// accessLogFormat is a stage access log line: JSON with the request id and the caller (the
// token's sub), never the token.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","requestTime":"$context.requestTime",` +
	`"routeKey":"$context.routeKey","status":"$context.status","responseLength":"$context.responseLength",` +
	`"integrationLatency":"$context.integrationLatency","sub":"$context.authorizer.claims.sub",` +
	`"error":"$context.error.message","authorizerError":"$context.authorizer.error"}`

// apiTables: the api function uses every table.
var apiTables = []string{dynamostore.TableInstances, dynamostore.TableOutbox, dynamostore.TableEvents,
	dynamostore.TableTemplates, dynamostore.TableIdempotency, dynamostore.TableCounters}

func newAPI(scope constructs.Construct, p Props, common map[string]*string, tables *Tables) (*API, error) {
	a := &API{Construct: constructs.NewConstruct(scope, jsii.String("Api"))}
	fn, err := newFunction(a.Construct, p, common, functionSpec{
		id: "ApiFunction", binary: "api",
		description: "berth HTTP API (API Gateway payload 2.0, JWT claims)",
		timeout:     APITimeout,
		env:         merge(map[string]*string{envAdminClaim: jsii.String(p.AdminClaim), envAdminGroup: jsii.String(p.AdminGroup)}, configEnv(p)),
		// Tables only: the API never sends to a queue (the outbox stream does). Scan: an
		// admin's listing of every owner's containers, the templates. Of the outbox's
		// indexes it queries by_webhook only (a subscription's deliveries). BatchGetItem on
		// the counters only: a usage query's aggregates (GET /api/usage).
		statements: append([]awsiam.PolicyStatement{
			allow(append(append([]string{}, workerActions...), "dynamodb:Scan"), tables.Arns(apiTables, dynamostore.TableInstances)...),
			allow([]string{"dynamodb:Query"}, tables.IndexArn(dynamostore.TableOutbox, dynamostore.IndexByWebhook)),
			allow([]string{"dynamodb:BatchGetItem"}, tables.Arns([]string{dynamostore.TableCounters})...),
		}, configStatements(p)...),
	})
	if err != nil {
		return nil, err
	}
	a.Function = fn

	issuer, audience := jsii.String(p.JWTIssuer), jsii.Strings(p.JWTAudience...)
	var consoleClientID *string
	if p.JWTIssuer == "" {
		a.newUserPool(p)
		issuer = jsii.String("https://cognito-idp." + *awscdk.Aws_REGION() + ".amazonaws.com/" + *a.UserPool.Ref())
		audience = &[]*string{a.UserPoolClient.Ref(), a.ConsoleClient.Ref()}
		consoleClientID = a.ConsoleClient.Ref()
	} else {
		// With an external issuer the console signs in with the first of its client ids,
		// which must allow the console's callback (docs/deploy.md).
		consoleClientID = jsii.String(p.JWTAudience[0])
	}
	fn.AddEnvironment(jsii.String(envOIDCIssuer), issuer, nil)
	fn.AddEnvironment(jsii.String(envOIDCClientID), consoleClientID, nil)
	a.HTTPAPI = awsapigatewayv2.NewHttpApi(a.Construct, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:     awscdk.Aws_STACK_NAME(),
		Description: jsii.String("berth API"),
		DefaultAuthorizer: awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), issuer,
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
				AuthorizerName: jsii.String("jwt"),
				JwtAudience:    audience,
				IdentitySource: jsii.Strings("$request.header.Authorization"),
			}),
	})
	if a.ConsoleClient != nil {
		// The callback needs the API's address, which exists only now.
		urls := &[]*string{a.ConsoleURL()}
		a.ConsoleClient.SetCallbackUrLs(urls)
		a.ConsoleClient.SetLogoutUrLs(urls)
	}
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiFunction"), fn, nil)
	a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(APIRoutePath),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: integration,
	})
	// The OpenAPI document, to anyone: client generators and API Gateway imports fetch it
	// without a token (it names no user data).
	a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(OpenAPIRoutePath),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
		Integration: integration,
		Authorizer:  awsapigatewayv2.NewHttpNoneAuthorizer(),
	})
	for _, path := range append(append([]string{}, ProbeRoutePaths...), ConsoleRoutePaths...) {
		a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
			Integration: integration,
			Authorizer:  awsapigatewayv2.NewHttpNoneAuthorizer(),
		})
	}
	// API Gateway waits up to 30 s on an HTTP API integration; the construct still checks
	// REST's 29 s limit, so the timeout is set on the resource. The function's own 29 s
	// timeout ends a request first.
	for _, c := range *a.HTTPAPI.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if in, ok := c.(awsapigatewayv2.CfnIntegration); ok {
			in.SetTimeoutInMillis(jsii.Number(APIIntegrationTimeout.Milliseconds()))
		}
	}

	logs := newLogGroup(a.Construct, jsii.String("AccessLogs"), p)
	// The construct has no access log or throttling options for the default stage.
	stage := a.HTTPAPI.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingBurstLimit: jsii.Number(APIThrottleBurst),
		ThrottlingRateLimit:  jsii.Number(APIThrottleRate),
	})
	return a, nil
}

// newUserPool creates the stack's own identity provider: a pool whose admins create the users
// (no self sign-up), an app client without a secret (a CLI cannot keep one) and the admin group.
func (a *API) newUserPool(p Props) {
	a.UserPool = awscognito.NewCfnUserPool(a.Construct, jsii.String("UserPool"), &awscognito.CfnUserPoolProps{
		UserPoolName:           jsii.String(*awscdk.Aws_STACK_NAME() + "-users"),
		AdminCreateUserConfig:  &awscognito.CfnUserPool_AdminCreateUserConfigProperty{AllowAdminCreateUserOnly: jsii.Bool(true)},
		UsernameAttributes:     jsii.Strings("email"),
		AutoVerifiedAttributes: jsii.Strings("email"),
		// A password alone reaches running containers: MFA is offered to everyone, and
		// UserPoolMfa=ON requires it.
		MfaConfiguration: jsii.String(p.UserPoolMfa),
		EnabledMfas:      jsii.Strings("SOFTWARE_TOKEN_MFA"),
		Policies: &awscognito.CfnUserPool_PoliciesProperty{
			PasswordPolicy: &awscognito.CfnUserPool_PasswordPolicyProperty{
				MinimumLength: jsii.Number(12), RequireLowercase: jsii.Bool(true), RequireUppercase: jsii.Bool(true),
				RequireNumbers: jsii.Bool(true), RequireSymbols: jsii.Bool(true),
			},
		},
	})
	if p.UserPoolThreatProtection != "OFF" {
		// Threat protection is a feature of the Plus plan only.
		a.UserPool.SetUserPoolTier(jsii.String("PLUS"))
		a.UserPool.SetUserPoolAddOns(&awscognito.CfnUserPool_UserPoolAddOnsProperty{
			AdvancedSecurityMode: jsii.String(p.UserPoolThreatProtection),
		})
	}
	a.UserPoolClient = awscognito.NewCfnUserPoolClient(a.Construct, jsii.String("UserPoolClient"), &awscognito.CfnUserPoolClientProps{
		UserPoolId:                 a.UserPool.Ref(),
		ClientName:                 jsii.String(*awscdk.Aws_STACK_NAME() + "-cli"),
		GenerateSecret:             jsii.Bool(false),
		ExplicitAuthFlows:          jsii.Strings("ALLOW_USER_PASSWORD_AUTH", "ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"),
		PreventUserExistenceErrors: jsii.String("ENABLED"),
		AccessTokenValidity:        jsii.Number(60),
		IdTokenValidity:            jsii.Number(60),
		TokenValidityUnits: &awscognito.CfnUserPoolClient_TokenValidityUnitsProperty{
			AccessToken: jsii.String("minutes"), IdToken: jsii.String("minutes"),
		},
	})
	// The web console's sign-in: Cognito's hosted pages at a domain of the stack's own (its id's
	// UUID: unique and lowercase), and a public client for the code flow with PKCE; its callback
	// is set once the API exists.
	a.UserPoolDomain = awscognito.NewCfnUserPoolDomain(a.Construct, jsii.String("UserPoolDomain"), &awscognito.CfnUserPoolDomainProps{
		UserPoolId: a.UserPool.Ref(),
		Domain: awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("berth-"),
			awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), awscdk.Aws_STACK_ID(), nil))}),
	})
	a.ConsoleClient = awscognito.NewCfnUserPoolClient(a.Construct, jsii.String("ConsoleUserPoolClient"), &awscognito.CfnUserPoolClientProps{
		UserPoolId:                      a.UserPool.Ref(),
		ClientName:                      jsii.String(*awscdk.Aws_STACK_NAME() + "-console"),
		GenerateSecret:                  jsii.Bool(false),
		AllowedOAuthFlowsUserPoolClient: jsii.Bool(true),
		AllowedOAuthFlows:               jsii.Strings("code"),
		AllowedOAuthScopes:              jsii.Strings("openid", "email", "profile"),
		SupportedIdentityProviders:      jsii.Strings("COGNITO"),
		ExplicitAuthFlows:               jsii.Strings("ALLOW_REFRESH_TOKEN_AUTH"),
		PreventUserExistenceErrors:      jsii.String("ENABLED"),
		AccessTokenValidity:             jsii.Number(60),
		IdTokenValidity:                 jsii.Number(60),
		TokenValidityUnits: &awscognito.CfnUserPoolClient_TokenValidityUnitsProperty{
			AccessToken: jsii.String("minutes"), IdToken: jsii.String("minutes"),
		},
	})
	awscognito.NewCfnUserPoolGroup(a.Construct, jsii.String("AdminUserGroup"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId:  a.UserPool.Ref(),
		GroupName:   jsii.String(p.AdminGroup),
		Description: jsii.String("berth administrators (templates, every owner's containers)"),
	})
}
