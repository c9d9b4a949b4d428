package kubernetes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-io/berth/internal/config"
	"github.com/berth-io/berth/internal/runtime"
)

// PullSecretName is the dockerconfigjson Secret berth keeps in each
// cluster's namespace from docker.registries, and names in every Pod's
// imagePullSecrets.
const PullSecretName = "berth-registries"

// pullSecret is the Secret's content and, per cluster, whether it has been
// written by this process (it is written before the first Pod that needs
// it, and rewritten when config changed since).
type pullSecret struct {
	data []byte // the .dockerconfigjson; nil when no registry has a password

	mu    sync.Mutex
	ready map[string]bool
}

func newPullSecret(regs []config.Registry) (*pullSecret, error) {
	type auth struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	auths := map[string]auth{}
	for _, r := range regs {
		// ECR's tokens expire within hours; on EKS the nodes' role pulls.
		if r.Password == "" || strings.Contains(r.Host, ".dkr.ecr.") {
			continue
		}
		auths[r.Host] = auth{Username: r.Username, Password: r.Password,
			Auth: base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))}
	}
	ps := &pullSecret{ready: map[string]bool{}}
	if len(auths) == 0 {
		return ps, nil
	}
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		return nil, fmt.Errorf("registry credentials: %w", err)
	}
	ps.data = data
	return ps, nil
}

// ensure writes the Secret into cl's namespace once per process and
// returns its name, or "" when there are no credentials to give.
func (p *pullSecret) ensure(ctx context.Context, cl *cluster, instanceID string) (string, error) {
	if p.data == nil {
		return "", nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready[cl.cfg.Name] {
		return PullSecretName, nil
	}
	cs, err := cl.client(ctx)
	if err != nil {
		return "", runtime.NewError(runtime.ErrUnavailable, "create", instanceID, cl.cfg.Name, err)
	}
	secrets := cs.CoreV1().Secrets(cl.cfg.Namespace)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PullSecretName, Labels: map[string]string{runtime.LabelManaged: "true"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: p.data},
	}
	got, err := secrets.Get(ctx, PullSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("created concurrently; will check it again: %w", err)
		}
	case err == nil && !bytes.Equal(got.Data[corev1.DockerConfigJsonKey], p.data):
		// The credentials changed in config since the Secret was written.
		got.Data = want.Data
		_, err = secrets.Update(ctx, got, metav1.UpdateOptions{})
	}
	if err != nil {
		// Never the Secret's content: only what the API server said.
		return "", classify(fmt.Errorf("writing the image pull secret %s: %w", PullSecretName, err), "create", instanceID, cl.cfg.Name)
	}
	p.ready[cl.cfg.Name] = true
	return PullSecretName, nil
}
