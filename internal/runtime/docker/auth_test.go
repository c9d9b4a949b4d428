package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/moby/moby/api/types/registry"

	"github.com/berth-io/berth/internal/config"
)

// fakeECR answers GetAuthorizationToken the way ECR does (AWS JSON 1.1), so
// the real SDK client, its signing and its decoding are what is tested.
func fakeECR(t *testing.T, user, pass string, expires time.Time) (*ecr.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken" {
			http.Error(w, "unexpected target "+got, http.StatusBadRequest)
			return
		}
		if !strings.Contains(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
			http.Error(w, "unsigned", http.StatusForbidden)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"authorizationData":[{"authorizationToken":%q,"expiresAt":%d,"proxyEndpoint":"https://x"}]}`,
			base64.StdEncoding.EncodeToString([]byte(user+":"+pass)), expires.Unix())
	}))
	t.Cleanup(srv.Close)
	cli := ecr.NewFromConfig(aws.Config{
		Region:       "eu-west-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(srv.URL),
	})
	return cli, &calls
}

func decodeAuth(t *testing.T, h string) registry.AuthConfig {
	t.Helper()
	b, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("header is not base64url: %v", err)
	}
	var ac registry.AuthConfig
	if err := json.Unmarshal(b, &ac); err != nil {
		t.Fatal(err)
	}
	return ac
}

func TestRegistryAuthECR(t *testing.T) {
	cli, calls := fakeECR(t, "AWS", "token-1", time.Now().Add(12*time.Hour))
	a := newRegistryAuth(nil, cli)
	const host = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
	for range 3 {
		h, err := a.header(context.Background(), host+"/team/app:1")
		if err != nil {
			t.Fatal(err)
		}
		if ac := decodeAuth(t, h); ac.Username != "AWS" || ac.Password != "token-1" || ac.ServerAddress != host {
			t.Fatalf("auth = %+v", ac)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("ECR asked %d times for three pulls; want one (cached)", n)
	}

	// A token about to expire is replaced.
	a.ecr.now = func() time.Time { return time.Now().Add(12*time.Hour - 5*time.Minute) }
	if _, err := a.header(context.Background(), host+"/team/app:1"); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("ECR asked %d times; want a refresh near expiry", n)
	}
}

func TestRegistryAuthStatic(t *testing.T) {
	a := newRegistryAuth([]config.Registry{
		{Host: "ghcr.io", Username: "bot", Password: "pat"},
		{Host: "https://index.docker.io/", Username: "hubuser", Password: "hubpass"},
	}, nil)
	tests := []struct {
		image, user string
	}{
		{"ghcr.io/org/app:1", "bot"},
		{"busybox", "hubuser"}, // docker.io/library/busybox
		{"quay.io/x/y", ""},    // none configured: anonymous
	}
	for _, tt := range tests {
		h, err := a.header(context.Background(), tt.image)
		if err != nil {
			t.Fatalf("%s: %v", tt.image, err)
		}
		if tt.user == "" {
			if h != "" {
				t.Errorf("%s: want no credentials, got some", tt.image)
			}
			continue
		}
		if ac := decodeAuth(t, h); ac.Username != tt.user {
			t.Errorf("%s: user %q, want %q", tt.image, ac.Username, tt.user)
		}
	}
	if _, err := a.header(context.Background(), "not a ref!"); err == nil {
		t.Error("a bad reference was accepted")
	}
}

func TestECRHost(t *testing.T) {
	tests := []struct {
		host, region string
	}{
		{"123456789012.dkr.ecr.eu-west-1.amazonaws.com", "eu-west-1"},
		{"123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1"},
		{"123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn", "cn-north-1"},
		{"public.ecr.aws", ""},
		{"12345.dkr.ecr.eu-west-1.amazonaws.com", ""},
		{"ghcr.io", ""},
	}
	for _, tt := range tests {
		if got := ecrRegion(tt.host); got != tt.region || isECRHost(tt.host) != (tt.region != "") {
			t.Errorf("%s: region %q (want %q)", tt.host, got, tt.region)
		}
	}
}
