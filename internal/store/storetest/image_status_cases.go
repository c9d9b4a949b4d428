package storetest

import (
	"context"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// testImageStatus: a template's image check is stored beside it without a
// new version, shown by get and list, refused for an unknown template, and
// cleared by the next put (whatever the put carries).
func testImageStatus(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	tpl := container.Template{Name: "busybox", Runtime: container.RuntimeDocker, Image: "busybox:1"}
	if _, _, err := s.PutTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	status := []container.ImageStatus{
		{Host: "a", Image: "busybox:1", Status: container.ImagePresent, ImageID: "sha256:1", CheckedAt: c.Now()},
		{Host: "b", Image: "busybox:1", Status: container.ImageError, Error: "host down", CheckedAt: c.Now()},
	}
	if err := s.SetImageStatus(ctx, "busybox", status); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTemplate(ctx, "busybox")
	if err != nil || got.Version != 1 || len(got.ImageStatus) != 2 || got.ImageStatus[1] != status[1] ||
		!got.ImageStatus[0].CheckedAt.Equal(c.Now()) || got.ImageStatus[0].ImageID != "sha256:1" {
		t.Fatalf("GetTemplate after SetImageStatus = %+v, %v", got, err)
	}
	list, err := s.ListTemplates(ctx)
	if err != nil || len(list) != 1 || len(list[0].ImageStatus) != 2 {
		t.Fatalf("ListTemplates = %+v, %v", list, err)
	}
	wantErr(t, "SetImageStatus(unknown)", s.SetImageStatus(ctx, "nope", status), store.ErrNotFound)
	if _, err := s.GetTemplate(ctx, "nope"); err == nil {
		t.Fatal("SetImageStatus made a template")
	}
	tpl.Image = "busybox:2"
	tpl.ImageStatus = status
	stored, _, err := s.PutTemplate(ctx, tpl)
	if err != nil || len(stored.ImageStatus) != 0 {
		t.Fatalf("PutTemplate = %+v, %v", stored, err)
	}
	if got, err = s.GetTemplate(ctx, "busybox"); err != nil || len(got.ImageStatus) != 0 || got.Version != 2 {
		t.Fatalf("GetTemplate after a put = %+v, %v", got, err)
	}
}
