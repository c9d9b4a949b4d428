package samtemplate

import (
	"fmt"
	"strings"

	"github.com/berth-io/berth/internal/cfnintrinsics"
)

// refResource resolves a Ref the evaluator left to the stack: a resource.
// A pseudo parameter without a value (AWS::NotificationARNs, …) has no
// meaning in the emulator.
func (p *parser) refResource(name string) (any, error) {
	if strings.HasPrefix(name, "AWS::") {
		return nil, fmt.Errorf("pseudo parameter %s is not supported here", name)
	}
	return p.ref(name)
}

// scalar formats a resolved value as CloudFormation would in a string.
func scalar(v any) string { return cfnintrinsics.Scalar(v) }
