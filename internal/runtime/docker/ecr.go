package docker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
)

// ECRTokenGetter is the one ECR call berth makes; *ecr.Client has it.
type ECRTokenGetter interface {
	GetAuthorizationToken(ctx context.Context, in *ecr.GetAuthorizationTokenInput, opts ...func(*ecr.Options)) (*ecr.GetAuthorizationTokenOutput, error)
}

// ecrHost matches private ECR registry hosts:
// <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn].
var ecrHost = regexp.MustCompile(`^([0-9]{12})\.dkr\.ecr(-fips)?\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)

func isECRHost(h string) bool { return ecrHost.MatchString(h) }

// ecrRegion is the region in an ECR host, where its token must come from.
func ecrRegion(h string) string {
	if m := ecrHost.FindStringSubmatch(h); m != nil {
		return m[3]
	}
	return ""
}

// ecrRefreshBefore: a token this close to expiry is replaced, so no pull
// starts with a token that dies during it.
const ecrRefreshBefore = 15 * time.Minute

// ecrTokens caches one token per registry host until shortly before expiry.
type ecrTokens struct {
	getter ECRTokenGetter // nil: an SDK client per region, made on first use

	mu      sync.Mutex
	clients map[string]ECRTokenGetter
	cache   map[string]ecrToken
	now     func() time.Time
}

type ecrToken struct {
	user, pass string
	expires    time.Time
}

func newECRTokens(getter ECRTokenGetter) *ecrTokens {
	return &ecrTokens{getter: getter, clients: map[string]ECRTokenGetter{}, cache: map[string]ecrToken{}, now: time.Now}
}

// get returns the user and password for an ECR registry host.
func (t *ecrTokens) get(ctx context.Context, host string) (string, string, error) {
	t.mu.Lock()
	defer t.mu.Unlock() // one fetch per host at a time: a burst of pulls asks once
	if tok, ok := t.cache[host]; ok && t.now().Add(ecrRefreshBefore).Before(tok.expires) {
		return tok.user, tok.pass, nil
	}
	getter, err := t.client(ctx, host)
	if err != nil {
		return "", "", err
	}
	// No registry ids: a token is good for every registry the caller's
	// credentials may read.
	out, err := getter.GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return "", "", fmt.Errorf("ecr token for %s: %w", host, err)
	}
	if len(out.AuthorizationData) == 0 || out.AuthorizationData[0].AuthorizationToken == nil {
		return "", "", fmt.Errorf("ecr token for %s: empty answer", host)
	}
	d := out.AuthorizationData[0]
	raw, err := base64.StdEncoding.DecodeString(*d.AuthorizationToken)
	if err != nil {
		return "", "", fmt.Errorf("ecr token for %s: not base64", host)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New("ecr token for " + host + ": not user:password")
	}
	tok := ecrToken{user: user, pass: pass, expires: t.now().Add(12 * time.Hour)}
	if d.ExpiresAt != nil {
		tok.expires = *d.ExpiresAt
	}
	t.cache[host] = tok
	return user, pass, nil
}

// client returns the getter for host's region.
func (t *ecrTokens) client(ctx context.Context, host string) (ECRTokenGetter, error) {
	if t.getter != nil {
		return t.getter, nil
	}
	region := ecrRegion(host)
	if c, ok := t.clients[region]; ok {
		return c, nil
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("aws config for ecr in %s: %w", region, err)
	}
	c := ecr.NewFromConfig(cfg)
	t.clients[region] = c
	return c, nil
}
