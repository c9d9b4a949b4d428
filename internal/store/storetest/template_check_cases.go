package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// testCreateChecksTemplate: a create carrying the template it was built
// from (CreateParams.Template) is made while that template is stored
// unchanged, an image check beside it included, and refused with
// ErrTemplateChanged, writing nothing, once a put or a delete changed it,
// even a delete and a put of the same content.
func testCreateChecksTemplate(t *testing.T, s store.Store, c *Clock) {
	ctx := context.Background()
	tpl := container.Template{Name: "busybox", Runtime: container.RuntimeDocker, Image: "busybox:1",
		Env: map[string]string{"A": "1"}, Command: []string{"sleep", "60"}}
	if _, _, err := s.PutTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	v1, err := s.GetTemplate(ctx, tpl.Name)
	if err != nil {
		t.Fatal(err)
	}
	create := func(held container.Template) error {
		p := NewCreate(c, "alice")
		p.MaxPending = 10
		p.Template = &held
		_, err := s.CreateInstance(ctx, p)
		return err
	}
	if err := create(v1); err != nil {
		t.Fatalf("create with the template as read: %v", err)
	}
	status := []container.ImageStatus{{Host: "a", Image: "busybox:1", Status: container.ImagePresent, CheckedAt: c.Now()}}
	if err := s.SetImageStatus(ctx, tpl.Name, status); err != nil {
		t.Fatal(err)
	}
	if err := create(v1); err != nil {
		t.Fatalf("create after an image check: %v", err)
	}
	tpl.Image = "busybox:2"
	if _, _, err := s.PutTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "create from the replaced template", create(v1), store.ErrTemplateChanged)
	v2, err := s.GetTemplate(ctx, tpl.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := create(v2); err != nil {
		t.Fatalf("create with the new template: %v", err)
	}
	if err := s.DeleteTemplate(ctx, tpl.Name); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "create from a deleted template", create(v2), store.ErrTemplateChanged)
	// Put again after the delete, the template starts again at version 1:
	// a copy of the first version 1 must not pass for it. A put stamps its
	// second, so the same content put again later is another document.
	w1, _, err := s.PutTemplate(ctx, tpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, tpl.Name); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Second)
	if w, _, err := s.PutTemplate(ctx, tpl); err != nil || w.Version != w1.Version {
		t.Fatalf("put again = version %d, %v; want version %d", w.Version, err, w1.Version)
	}
	wantErr(t, "create from a deleted template put again", create(w1), store.ErrTemplateChanged)
	if n := admission(t, s); n != 3 {
		t.Fatalf("admission %d, want 3: a refused create took a slot", n)
	}
	if got := allInstances(t, s, store.ListQuery{Owner: "alice"}); len(got) != 3 {
		t.Fatalf("%d instances stored, want 3", len(got))
	}
}
