package webhook

import (
	"testing"

	"github.com/berth-io/berth/internal/container"
)

// Every delivery kind has a name of its own here.
func TestEventTypeNamesEveryKind(t *testing.T) {
	if err := container.CheckKindNames(eventTypes); err != nil {
		t.Error(err)
	}
}
