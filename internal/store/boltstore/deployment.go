package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// keyDeployment holds the deployment record in the meta bucket.
var keyDeployment = []byte("deployment")

// GetDeployment returns the stored deployment record, or a zero one.
func (s *Store) GetDeployment(ctx context.Context) (store.Deployment, error) {
	var d store.Deployment
	err := s.view(ctx, "get deployment", func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketMeta), keyDeployment, &d)
		return err
	})
	if err != nil {
		return store.Deployment{}, err
	}
	return d, nil
}

// PutDeployment replaces the record if it is still at d.Version.
func (s *Store) PutDeployment(ctx context.Context, d store.Deployment) (store.Deployment, error) {
	err := s.update(ctx, "put deployment", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		var cur store.Deployment
		if _, err := getJSON(b, keyDeployment, &cur); err != nil {
			return err
		}
		if cur.Version != d.Version {
			return fmt.Errorf("deployment record at version %d, not %d: %w", cur.Version, d.Version, store.ErrDeploymentChanged)
		}
		d.Version++
		d.UpdatedAt = s.now().UTC()
		return putJSON(b, keyDeployment, d)
	})
	if err != nil {
		return store.Deployment{}, err
	}
	return d, nil
}
