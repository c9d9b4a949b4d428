package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// SSMAPI is the one call SSM makes for berth (*ssm.Client has it).
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ SSMAPI = (*ssm.Client)(nil)

// SSM reads secret name from the Parameter Store parameter Prefix+name,
// decrypted (a SecureString's KMS key must allow the worker's role).
type SSM struct {
	Client SSMAPI
	Prefix string
}

// Secret returns the parameter's value.
func (s SSM) Secret(ctx context.Context, name string) (string, error) {
	param := s.Prefix + name
	out, err := s.Client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param), WithDecryption: aws.Bool(true)})
	var nf *types.ParameterNotFound
	switch {
	case errors.As(err, &nf):
		return "", fmt.Errorf("secret %q (parameter %s): %w", name, param, ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("secret %q (parameter %s): %w", name, param, err)
	case out.Parameter == nil || out.Parameter.Value == nil:
		return "", fmt.Errorf("secret %q (parameter %s) has no value: %w", name, param, ErrNotFound)
	}
	return *out.Parameter.Value, nil
}
