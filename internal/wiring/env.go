// Package wiring is berth's composition root: what every entry point
// (`berth serve`, every Lambda function, the emulator) builds from its
// configuration, once: the configuration itself, the AWS SDK configuration
// and DynamoDB client, the store, the queues, the runtimes, the logger and
// the loops' options. It stands above the loops it builds; config stays a
// leaf below them.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/berth-io/berth/internal/config"
)

// ConfigFileVar names the optional config.yml packaged with a function:
// docker.hosts and docker.registries can only be said in YAML.
const ConfigFileVar = "BERTH_CONFIG_FILE"

// ConfigSecretVar names a Secrets Manager secret (name or ARN) whose
// string is a config.yml document: how a deployed worker or reconciler gets
// docker.hosts with their TLS material and docker.registries, which must
// never sit in plain text in a template, an environment or a package. It
// takes the place of the file named by ConfigFileVar; both at once is an
// error.
const ConfigSecretVar = "BERTH_CONFIG_SECRET"

// LoadConfig is config.Load of the file named by ConfigFileVar (if any) and
// the environment, with the store backend fixed to dynamodb and, when
// withSQS, the queue backend to sqs: the only ones a Lambda function can
// use, fixed so that their keys (table prefix, queue URLs) are validated.
// An explicit other backend is refused rather than ignored.
func LoadConfig(function string, env func(string) (string, bool), withSQS bool) (*config.Config, error) {
	fixedEnv, err := fixBackends(function, env, withSQS)
	if err != nil {
		return nil, err
	}
	path, _ := env(ConfigFileVar)
	return config.Load(path, fixedEnv)
}

// LoadConfigData is LoadConfig with the document data (from the secret
// named name) in the place of the file. Its problems are reported by key
// and source only: a YAML error message can quote the value it could not
// read, and here that value may be a private key.
func LoadConfigData(function, name string, data []byte, env func(string) (string, bool), withSQS bool) (*config.Config, error) {
	fixedEnv, err := fixBackends(function, env, withSQS)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadData(name, data, fixedEnv)
	if err != nil {
		return nil, withheld(name, err)
	}
	return cfg, nil
}

// withheld replaces err's messages by the keys and sources they concern.
func withheld(name string, err error) error {
	var where []string
	var walk func(error)
	walk = func(e error) {
		var fe *config.FieldError
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range joined.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &fe) {
			where = append(where, fmt.Sprintf("%s (%s)", fe.Key, fe.Source))
		}
	}
	walk(err)
	if len(where) == 0 {
		return fmt.Errorf("config: the document in %s is not valid YAML (details withheld: it may hold secret material)", name)
	}
	return fmt.Errorf("config: the document in %s is invalid at %s (details withheld: it may hold secret material)", name, strings.Join(where, ", "))
}

// fixBackends returns env with the backends the function can use fixed,
// or an error when env names another.
func fixBackends(function string, env func(string) (string, bool), withSQS bool) (func(string) (string, bool), error) {
	fixed := map[string]string{"BERTH_STORE_BACKEND": string(config.StoreDynamoDB)}
	if withSQS {
		fixed["BERTH_QUEUE_BACKEND"] = string(config.QueueSQS)
	}
	for k, want := range fixed {
		if v, ok := env(k); ok && strings.TrimSpace(v) != want {
			return nil, fmt.Errorf("config: %s=%q: the %s function runs only with %q", k, v, function, want)
		}
	}
	return func(k string) (string, bool) {
		if v, ok := fixed[k]; ok {
			return v, true
		}
		return env(k)
	}, nil
}

// AWSConfig loads the SDK's default chain (the function's role, AWS_REGION),
// in region when the configuration names one.
func AWSConfig(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return cfg, errors.New("no AWS region: set AWS_REGION or BERTH_STORE_REGION")
	}
	return cfg, nil
}

// DynamoDB returns the DynamoDB client. An endpoint override means DynamoDB
// Local (tests, `sam local`), which sends no CRC32 header on error replies,
// so response checksums are not validated there.
func DynamoDB(cfg aws.Config, env func(string) (string, bool)) *dynamodb.Client {
	local := slices.ContainsFunc([]string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"}, func(k string) bool {
		v, ok := env(k)
		return ok && v != ""
	})
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = local
		o.RetryMaxAttempts = 3
	})
}

// Logger is a JSON logger on stdout (CloudWatch Logs) at the level of
// Lambda's advanced logging control (AWS_LAMBDA_LOG_LEVEL).
func Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: LogLevel(os.Getenv("AWS_LAMBDA_LOG_LEVEL"))}))
}

// LogLevel maps AWS_LAMBDA_LOG_LEVEL to slog; INFO when unset.
func LogLevel(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// WarnUnknownEnv logs BERTH_* variables that configure nothing (misspelt?).
func WarnUnknownEnv(logger *slog.Logger, environ []string) {
	if unknown := config.UnknownEnv(environ, ConfigFileVar, ConfigSecretVar, ConfigParameterVar); len(unknown) > 0 {
		logger.Warn("ignoring unknown BERTH_ environment variables (misspelt?)", "variables", unknown)
	}
}
