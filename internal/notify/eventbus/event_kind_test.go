package eventbus

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
)

// Every delivery kind has a name of its own here.
func TestDetailTypeNamesEveryKind(t *testing.T) {
	if err := container.CheckKindNames(detailTypes); err != nil {
		t.Error(err)
	}
}
