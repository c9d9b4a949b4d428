package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/berth-io/berth/internal/store"
)

// usageKey is the counters key of one of a subject's usage buckets:
// "usage" 0x00 kind 0x00 name 0x00 bucket, holding its store.UsageDoc as
// JSON, as DynamoDB holds it in one item.
func usageKey(sub store.QuotaSubject, bucket string) []byte {
	return joinKey("usage", string(joinKey(sub.Kind, string(joinKey(sub.Name, bucket)))))
}

func usageDoc(tx *bolt.Tx, sub store.QuotaSubject, bucket string) (store.UsageDoc, error) {
	doc := store.UsageDoc{}
	_, err := getJSON(tx.Bucket(bucketCounters), usageKey(sub, bucket), &doc)
	return doc, err
}

// applyUsage adds u.Delta to its bucket in the write's own transaction.
func applyUsage(tx *bolt.Tx, u store.UsageAdd) error {
	doc, err := usageDoc(tx, u.Subject, u.Bucket)
	if err != nil {
		return err
	}
	k := u.Key.String()
	c := doc[k]
	c.Add(u.Delta)
	if c.IsZero() {
		delete(doc, k)
	} else {
		doc[k] = c
	}
	return putJSON(tx.Bucket(bucketCounters), usageKey(u.Subject, u.Bucket), doc)
}

// Usage answers q from the usage buckets in one read transaction.
func (s *Store) Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageItem, error) {
	return store.AnswerUsage(ctx, q, s.now(), func(ctx context.Context, sub store.QuotaSubject, buckets []string) (map[string]store.UsageDoc, error) {
		docs := map[string]store.UsageDoc{}
		err := s.view(ctx, "usage", func(tx *bolt.Tx) error {
			for _, b := range buckets {
				doc, err := usageDoc(tx, sub, b)
				if err != nil {
					return err
				}
				docs[b] = doc
			}
			return nil
		})
		return docs, err
	})
}
