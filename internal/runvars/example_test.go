package runvars_test

import (
	"errors"
	"fmt"

	"github.com/berth-io/berth/internal/runvars"
)

// A template's strings are expanded for one instance, from the declared
// variables only: $NAME and ${NAME} are replaced, $$ is a literal $, and a
// declared variable without a value (GROUP for an instance in no group)
// expands to "".
func ExampleExpand() {
	values := map[string]string{
		"USERID":         "alice",
		"WORKSPACE_PATH": "/srv/berth/alice",
		"CONTAINER_NAME": "notebook",
	}
	for _, s := range []string{
		"$WORKSPACE_PATH/data",
		"${CONTAINER_NAME}-cache",
		"price: $$5 for $USERID",
		"group=[$GROUP]",
	} {
		out, err := runvars.Expand(s, values)
		fmt.Printf("%-24q → %q %v\n", s, out, err)
	}
	// Output:
	// "$WORKSPACE_PATH/data"   → "/srv/berth/alice/data" <nil>
	// "${CONTAINER_NAME}-cache" → "notebook-cache" <nil>
	// "price: $$5 for $USERID" → "price: $5 for alice" <nil>
	// "group=[$GROUP]"         → "group=[]" <nil>
}

// Check needs no values, so a template is refused when it is written if it
// names anything but a declared variable: the server's own environment
// (AWS_SECRET_ACCESS_KEY, say) is never reachable from a template.
func ExampleCheck() {
	fmt.Println(runvars.Check("/home/$USERID"))

	err := runvars.Check("key=$AWS_SECRET_ACCESS_KEY")
	var unknown *runvars.UnknownError
	fmt.Println(errors.As(err, &unknown), unknown.Names)

	var syntax *runvars.SyntaxError
	fmt.Println(errors.As(runvars.Check("${USERID"), &syntax), syntax.Reason)
	// Output:
	// <nil>
	// true [AWS_SECRET_ACCESS_KEY]
	// true unclosed ${
}
