package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// PutTemplate creates or replaces the template named t.Name. The stored
// Version is the previous stored one plus one (1 for a new template), and
// UpdatedAt is the store's clock in RFC 3339 UTC; the caller's values of
// both are ignored.
func (s *Store) PutTemplate(ctx context.Context, t container.Template) (container.Template, bool, error) {
	if t.Name == "" {
		return container.Template{}, false, fmt.Errorf("boltstore: put template: template has no name")
	}
	var created bool
	err := s.update(ctx, "put template "+t.Name, func(tx *bolt.Tx) error {
		var err error
		t, created, err = s.putTemplate(tx, t)
		return err
	})
	if err != nil {
		return container.Template{}, false, err
	}
	return t, created, nil
}

func (s *Store) putTemplate(tx *bolt.Tx, t container.Template) (container.Template, bool, error) {
	b := tx.Bucket(bucketTemplates)
	var old container.Template
	found, err := getJSON(b, []byte(t.Name), &old)
	if err != nil {
		return t, false, err
	}
	t.ImageStatus = nil
	t.Version = old.Version + 1
	t.UpdatedAt = s.now().UTC().Format(time.RFC3339)
	return t, !found, putJSON(b, []byte(t.Name), t)
}

// GetTemplate returns the template or ErrNotFound.
func (s *Store) GetTemplate(ctx context.Context, name string) (container.Template, error) {
	var t container.Template
	err := s.view(ctx, "get template "+name, func(tx *bolt.Tx) error {
		found, err := getJSON(tx.Bucket(bucketTemplates), []byte(name), &t)
		if err == nil && !found {
			err = fmt.Errorf("template %q: %w", name, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return container.Template{}, err
	}
	return t, nil
}

// ListTemplates returns every template in name order (bytewise).
func (s *Store) ListTemplates(ctx context.Context) ([]container.Template, error) {
	var out []container.Template
	err := s.view(ctx, "list templates", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).ForEach(func(k, v []byte) error {
			var t container.Template
			if err := decodeJSON(k, v, &t); err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTemplate removes the template; instances made from it keep their
// frozen Spec.
func (s *Store) DeleteTemplate(ctx context.Context, name string) error {
	return s.update(ctx, "delete template "+name, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTemplates)
		if b.Get([]byte(name)) == nil {
			return fmt.Errorf("template %q: %w", name, store.ErrNotFound)
		}
		return b.Delete([]byte(name))
	})
}

// SetImageStatus stores the template's image check beside it, keeping its
// version.
func (s *Store) SetImageStatus(ctx context.Context, name string, status []container.ImageStatus) error {
	return s.update(ctx, "set image status of template "+name, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTemplates)
		var t container.Template
		found, err := getJSON(b, []byte(name), &t)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("template %q: %w", name, store.ErrNotFound)
		}
		t.ImageStatus = status
		return putJSON(b, []byte(name), t)
	})
}
