package wiring

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/notify/eventbus"
)

// TestEventBusWiring: webhooks.event_bus turns on both halves, the
// manager's bus deliveries and the worker's deliverer on that bus; without
// it, neither.
func TestEventBusWiring(t *testing.T) {
	for _, bus := range []string{"", "default", "berth-events"} {
		cfg := config.Default()
		cfg.Webhooks.EventBus = bus
		if got := ManagerOptions(cfg, nil, nil, nil).EventBus; got != (bus != "") {
			t.Errorf("event_bus %q: manager writes bus deliveries = %v", bus, got)
		}
		d := EventBus(cfg, aws.Config{Region: "eu-west-1"})
		if bus == "" {
			if d != nil {
				t.Errorf("event_bus %q: a deliverer %T; want none", bus, d)
			}
			continue
		}
		ed, ok := d.(*eventbus.Deliverer)
		if !ok || ed.Publisher == nil || ed.Publisher.Bus != bus || ed.Publisher.Client == nil {
			t.Errorf("event_bus %q: deliverer %+v; want one on that bus", bus, d)
		}
	}
}
