package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/runtime"
	"github.com/berth-io/berth/internal/runtime/docker/dockertest"
	"github.com/berth-io/berth/internal/store/teststores"
	"github.com/berth-io/berth/internal/testenv"
)

// TestRefreshImageStatus: on AWS the reconciler function stores every
// template's image status at its first pass after a cold start when
// refresh_image_status_on_start is true, and leaves it alone when false
// (DynamoDB Local, a real Docker engine).
func TestRefreshImageStatus(t *testing.T) {
	for _, refresh := range []bool{true, false} {
		t.Run(map[bool]string{true: "refresh_image_status_on_start=true", false: "refresh_image_status_on_start=false"}[refresh], func(t *testing.T) {
			st := teststores.Dynamo(t, time.Now)
			image := testenv.TestImage(t)
			quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
			rt := dockertest.Engine(t)
			ctx := context.Background()
			m := manager.New(manager.Options{Store: st, Logger: quiet})
			for name, img := range map[string]string{"here": image, "absent": "berth-test/absent:1"} {
				if _, _, err := m.PutTemplate(ctx, identity.Caller{User: "root", Admin: true}, container.Template{Name: name,
					Runtime: "docker", Image: img, PullPolicy: container.PullNever, Command: []string{"true"}}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default()
			cfg.Container.RefreshImageStatusOnStart = refresh
			cfg.Docker.Scope = rt.Scope()
			fn, err := newFunction(cfg, st, []runtime.Runtime{rt}, nil, nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			fn.refreshImages = imageRefresher(cfg, st, rt, quiet)
			var ev events.EventBridgeEvent
			if err := json.Unmarshal(readFixture(t), &ev); err != nil {
				t.Fatal(err)
			}
			if _, err := fn.handle(ctx, ev); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"here": container.ImagePresent, "absent": container.ImageMissing} {
				tpl, err := st.GetTemplate(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case !refresh && len(tpl.ImageStatus) != 0:
					t.Fatalf("%s: image status with the key false: %+v", name, tpl.ImageStatus)
				case refresh && (len(tpl.ImageStatus) != 1 || tpl.ImageStatus[0].Status != want || tpl.ImageStatus[0].CheckedAt.IsZero()):
					t.Fatalf("%s: image status %+v, want %s", name, tpl.ImageStatus, want)
				}
			}
		})
	}
}
