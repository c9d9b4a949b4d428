package kubernetes

import (
	"context"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

type countingPresigner struct{ n int }

func (c *countingPresigner) PresignGetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.PresignOptions)) (*v4.PresignedHTTPRequest, error) {
	c.n++
	return &v4.PresignedHTTPRequest{URL: "https://sts.example/?n=" + string(rune('0'+c.n))}, nil
}

// TestEKSTokenRefresh: one token is reused until it is DefaultEKSTokenRefresh
// old, then a new one is signed, before EKS's 15 minutes run out.
func TestEKSTokenRefresh(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	p := &countingPresigner{}
	s := &eksTokenSource{cluster: "c", presign: p, now: func() time.Time { return now }, refresh: DefaultEKSTokenRefresh}
	first, err := s.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultEKSTokenRefresh - time.Second)
	if again, _ := s.Token(context.Background()); again != first || p.n != 1 {
		t.Errorf("token re-signed after %s (%d signings)", DefaultEKSTokenRefresh-time.Second, p.n)
	}
	now = now.Add(time.Second)
	if fresh, _ := s.Token(context.Background()); fresh == first || p.n != 2 {
		t.Errorf("token not re-signed at %s (%d signings)", DefaultEKSTokenRefresh, p.n)
	}
	if DefaultEKSTokenRefresh >= 15*time.Minute {
		t.Errorf("refresh %s is not before EKS's 15 minute limit", DefaultEKSTokenRefresh)
	}
}
