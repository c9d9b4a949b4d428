package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/config"
)

// Source is what every source here provides: the value of one secret, or
// an error wrapping ErrNotFound when it has no such secret.
type Source interface {
	Secret(ctx context.Context, name string) (string, error)
}

var (
	_ Source = File{}
	_ Source = Env{}
	_ Source = SSM{}
)

// New returns the source cfg configures, nil for none. lookup reads the
// environment (os.LookupEnv); ssmClient is needed for source ssm only.
func New(cfg config.Secrets, lookup func(string) (string, bool), ssmClient SSMAPI) (Source, error) {
	switch cfg.Source {
	case config.SecretsNone, "":
		return nil, nil
	case config.SecretsFile:
		return File{Path: cfg.File}, nil
	case config.SecretsEnv:
		return Env{Prefix: cfg.EnvPrefix, Lookup: lookup}, nil
	case config.SecretsSSM:
		if ssmClient == nil {
			return nil, errors.New("secrets.source ssm needs an SSM client (it is for the AWS worker)")
		}
		return SSM{Client: ssmClient, Prefix: cfg.SSMPrefix}, nil
	}
	return nil, fmt.Errorf("unknown secrets.source %q", cfg.Source)
}
