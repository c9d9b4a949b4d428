package kubernetes_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime/kubernetes"
)

func presigner(region string) *sts.PresignClient {
	return sts.NewPresignClient(sts.New(sts.Options{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret-key-example", ""),
	}))
}

// decodeToken checks the token's scheme and returns the presigned URL in it.
func decodeToken(t *testing.T, tok string) *url.URL {
	t.Helper()
	rest, ok := strings.CutPrefix(tok, "k8s-aws-v1.")
	if !ok {
		t.Fatalf("token %q lacks the k8s-aws-v1. prefix", tok)
	}
	if strings.ContainsAny(rest, "+/=") {
		t.Errorf("token is not unpadded base64url: %q", rest)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		t.Fatalf("token is not base64url: %v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatalf("token holds no URL: %v", err)
	}
	return u
}

// TestEKSToken compares the token's URL with what the SDK's presigner makes
// for GetCallerIdentity: the same endpoint and query, plus the cluster's
// name as a signed header and a 60 s expiry, which is what EKS checks.
func TestEKSToken(t *testing.T) {
	p := presigner("eu-west-1")
	tok, err := kubernetes.EKSToken(context.Background(), p, "prod-cluster")
	if err != nil {
		t.Fatal(err)
	}
	got := decodeToken(t, tok)
	plain, err := p.PresignGetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := url.Parse(plain.URL)
	if got.Scheme != "https" || got.Host != want.Host || got.Host != "sts.eu-west-1.amazonaws.com" || got.Path != want.Path {
		t.Errorf("token URL %s, SDK presigner's %s", got, want)
	}
	q, wq := got.Query(), want.Query()
	for _, k := range []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential"} {
		if q.Get(k) != wq.Get(k) || q.Get(k) == "" {
			t.Errorf("%s = %q, SDK presigner's %q", k, q.Get(k), wq.Get(k))
		}
	}
	if q.Get("Action") != "GetCallerIdentity" {
		t.Errorf("Action = %q", q.Get("Action"))
	}
	if q.Get("X-Amz-Expires") != "60" {
		t.Errorf("X-Amz-Expires = %q, want 60", q.Get("X-Amz-Expires"))
	}
	if sh := q.Get("X-Amz-SignedHeaders"); sh != "host;x-k8s-aws-id" {
		t.Errorf("X-Amz-SignedHeaders = %q, want host;x-k8s-aws-id", sh)
	}
	if q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Signature") == wq.Get("X-Amz-Signature") {
		t.Errorf("the signature must cover the cluster header: %q vs %q", q.Get("X-Amz-Signature"), wq.Get("X-Amz-Signature"))
	}
	if strings.Contains(tok, "secret-key-example") {
		t.Error("the secret key is in the token")
	}
}

type fakeDescriber struct {
	endpoint, ca string
	calls        atomic.Int32
}

func (f *fakeDescriber) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	f.calls.Add(1)
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
		Name: in.Name, Endpoint: aws.String(f.endpoint),
		CertificateAuthority: &ekstypes.Certificate{Data: aws.String(f.ca)},
	}}, nil
}

// TestEKSCluster: an EKS cluster's client finds its endpoint and CA through
// DescribeCluster (once, on first use) and sends the EKS token as a bearer
// token over TLS verified with that CA.
func TestEKSCluster(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	desc := &fakeDescriber{endpoint: srv.URL, ca: ca}
	var regions []string
	rt, err := kubernetes.New(config.Kubernetes{Clusters: []config.KubernetesCluster{
		{Name: "eks1", EKSCluster: "prod-cluster", Region: "eu-west-1", Namespace: "berth"},
	}}, kubernetes.Options{AWS: func(_ context.Context, region string) (kubernetes.ClusterDescriber, kubernetes.IdentityPresigner, error) {
		regions = append(regions, region)
		return desc, presigner(region), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if desc.calls.Load() != 0 {
		t.Error("New called DescribeCluster: it must dial nothing")
	}
	for range 2 {
		if err := rt.Ping(context.Background()); err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
	if desc.calls.Load() != 1 || len(regions) != 1 || regions[0] != "eu-west-1" {
		t.Errorf("DescribeCluster calls %d, regions %v; want one, in eu-west-1", desc.calls.Load(), regions)
	}
	bearer, _ := auth.Load().(string)
	tok, ok := strings.CutPrefix(bearer, "Bearer ")
	if !ok {
		t.Fatalf("Authorization = %q", bearer)
	}
	u := decodeToken(t, tok)
	if u.Host != "sts.eu-west-1.amazonaws.com" || u.Query().Get("X-Amz-SignedHeaders") != "host;x-k8s-aws-id" {
		t.Errorf("token URL %s", u)
	}
}
