package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/berth-io/berth/internal/config"
)

// registryAuth gives the X-Registry-Auth header for an image's registry:
// static credentials from config, or a fresh token for an ECR registry.
type registryAuth struct {
	byHost map[string]config.Registry
	ecr    *ecrTokens
}

func newRegistryAuth(regs []config.Registry, getter ECRTokenGetter) *registryAuth {
	a := &registryAuth{byHost: make(map[string]config.Registry, len(regs)), ecr: newECRTokens(getter)}
	for _, reg := range regs {
		a.byHost[normalizeRegistryHost(reg.Host)] = reg
	}
	return a
}

// normalizeRegistryHost maps the names Docker Hub goes by to one, and drops
// a scheme or trailing slash an admin may have written.
func normalizeRegistryHost(h string) string {
	h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	h = strings.TrimSuffix(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return h
}

// registryHost is the registry an image reference pulls from.
func registryHost(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", invalidf("image reference %q: %w", image, err)
	}
	return reference.Domain(named), nil
}

// header returns the encoded credentials for image's registry, or "" when
// none are configured (anonymous pull).
func (a *registryAuth) header(ctx context.Context, image string) (string, error) {
	host, err := registryHost(image)
	if err != nil {
		return "", err
	}
	reg, configured := a.byHost[host]
	var ac registry.AuthConfig
	switch {
	case isECRHost(host) && (!configured || reg.Password == ""):
		// ECR passwords are 12-hour tokens: asked for, never configured.
		user, pass, err := a.ecr.get(ctx, host)
		if err != nil {
			return "", err
		}
		ac = registry.AuthConfig{Username: user, Password: pass, ServerAddress: host}
	case configured:
		ac = registry.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: host}
	default:
		return "", nil
	}
	b, err := json.Marshal(ac)
	if err != nil {
		return "", fmt.Errorf("encode registry credentials: %w", err)
	}
	return base64.URLEncoding.EncodeToString(b), nil
}
