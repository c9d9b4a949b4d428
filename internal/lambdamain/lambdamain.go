// Package lambdamain is the one start-up every berth Lambda function's main
// runs, so that no function starts differently from the others: berth's
// JSON logger as the default, the function set up once from the process
// environment, then the Lambda runtime loop with the handler it built.
package lambdamain

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/berth-io/berth/internal/wiring"
)

// Setup builds a function from its environment: env looks a variable up,
// environ lists them all (for the keys a function reads by prefix).
type Setup[F any] func(ctx context.Context, env func(string) (string, bool), environ []string, logger *slog.Logger) (F, error)

// Run sets the function up and serves handler(fn) through the Lambda
// runtime API. A set-up error is logged with the function's name and ends
// the process with status 1, which Lambda reports as an init failure (and
// the emulator as a failed start).
func Run[F any](name string, setup Setup[F], handler func(F) any) {
	logger := wiring.Logger()
	slog.SetDefault(logger)
	fn, err := setup(context.Background(), os.LookupEnv, os.Environ(), logger)
	if err != nil {
		logger.Error(name+" function cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(handler(fn))
}
