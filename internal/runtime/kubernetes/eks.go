package kubernetes

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"k8s.io/client-go/rest"

	"github.com/berth-io/berth/internal/config"
)

// ClusterDescriber is the part of the EKS API berth uses: DescribeCluster,
// which gives a cluster's endpoint and certificate authority.
type ClusterDescriber interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// IdentityPresigner presigns STS GetCallerIdentity: the request an EKS API
// server replays to learn who a bearer token belongs to.
type IdentityPresigner interface {
	PresignGetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, opts ...func(*sts.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// EKSAPIFactory gives the EKS and STS clients for a region ("" means the
// SDK's default chain).
type EKSAPIFactory func(ctx context.Context, region string) (ClusterDescriber, IdentityPresigner, error)

// The EKS token scheme (as aws-iam-authenticator and `aws eks get-token`
// make it): a presigned GetCallerIdentity URL whose signed headers include
// the cluster's name, base64url-encoded behind a fixed prefix.
const (
	eksTokenPrefix     = "k8s-aws-v1."
	eksClusterIDHeader = "x-k8s-aws-id"
	// The presigned URL itself says 60 s; EKS accepts a token for 15
	// minutes after it was signed.
	eksPresignExpiry = "60"
)

// DefaultEKSTokenRefresh is how old an EKS token may get before a new one
// is signed. Defaults to 10 minutes, well inside the 15 EKS accepts.
const DefaultEKSTokenRefresh = 10 * time.Minute

func defaultEKSAPI(ctx context.Context, region string) (ClusterDescriber, IdentityPresigner, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return eks.NewFromConfig(cfg), sts.NewPresignClient(sts.NewFromConfig(cfg)), nil
}

// eksRESTConfig describes the EKS cluster and returns a config whose
// requests carry a bearer token signed with the AWS credentials.
func eksRESTConfig(ctx context.Context, cc config.KubernetesCluster, factory EKSAPIFactory) (*rest.Config, error) {
	if factory == nil {
		factory = defaultEKSAPI
	}
	desc, presign, err := factory(ctx, cc.Region)
	if err != nil {
		return nil, fmt.Errorf("eks cluster %s: %w", cc.EKSCluster, err)
	}
	out, err := desc.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &cc.EKSCluster})
	if err != nil {
		return nil, fmt.Errorf("eks:DescribeCluster %s: %w", cc.EKSCluster, err)
	}
	c := out.Cluster
	if c == nil || c.Endpoint == nil || *c.Endpoint == "" || c.CertificateAuthority == nil || c.CertificateAuthority.Data == nil {
		return nil, fmt.Errorf("eks:DescribeCluster %s: no endpoint or certificate authority yet (is the cluster still creating?)", cc.EKSCluster)
	}
	ca, err := base64.StdEncoding.DecodeString(*c.CertificateAuthority.Data)
	if err != nil {
		return nil, fmt.Errorf("eks cluster %s: certificate authority: %w", cc.EKSCluster, err)
	}
	tokens := &eksTokenSource{cluster: cc.EKSCluster, presign: presign, now: time.Now, refresh: DefaultEKSTokenRefresh}
	rc := &rest.Config{Host: *c.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &bearerTransport{tokens: tokens, next: rt} })
	return rc, nil
}

// EKSToken returns a bearer token for an EKS cluster: a presigned STS
// GetCallerIdentity request carrying the cluster's name in the signed
// x-k8s-aws-id header, as "k8s-aws-v1." + base64url(URL).
func EKSToken(ctx context.Context, p IdentityPresigner, clusterName string) (string, error) {
	req, err := p.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(so *sts.Options) {
			so.APIOptions = append(so.APIOptions,
				smithyhttp.SetHeaderValue(eksClusterIDHeader, clusterName),
				// Hoisted into the query string by the presigner, as all
				// X-Amz-* headers are.
				smithyhttp.SetHeaderValue("X-Amz-Expires", eksPresignExpiry))
		})
	})
	if err != nil {
		return "", fmt.Errorf("presigning sts:GetCallerIdentity for eks cluster %s: %w", clusterName, err)
	}
	return eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), nil
}

// eksTokenSource keeps one token and signs a new one when it gets old.
type eksTokenSource struct {
	cluster string
	presign IdentityPresigner
	now     func() time.Time
	refresh time.Duration

	mu     sync.Mutex
	token  string
	signed time.Time
}

func (s *eksTokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Sub(s.signed) < s.refresh {
		return s.token, nil
	}
	tok, err := EKSToken(ctx, s.presign, s.cluster)
	if err != nil {
		return "", err
	}
	s.token, s.signed = tok, s.now()
	return tok, nil
}

// bearerTransport puts the current EKS token on every request.
type bearerTransport struct {
	tokens *eksTokenSource
	next   http.RoundTripper
}

func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := b.tokens.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errors.Join(errors.New("no eks token"), err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(req)
}
