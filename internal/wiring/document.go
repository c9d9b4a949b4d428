package wiring

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"gopkg.in/yaml.v3"

	"github.com/berth-io/berth/internal/config"
)

// ConfigParameterVar names the SSM String parameter that holds a
// deployment's non-secret config.yml document, pinned to one version as
// name:version (template.yaml's ConfigParameterName and ConfigVersion):
// the container: keys, docker.hosts and kubernetes.clusters with their
// roots and labels, reconcile settings. Every function that reads the
// configuration gets it, the api function too, so that all of them decide
// with the same keys. Changing the configuration is a new version of the
// parameter and a deployment that names it: a function never sees a
// document it was not deployed with.
const ConfigParameterVar = "BERTH_CONFIG_PARAMETER"

// ParameterReader is the part of the SSM client the configuration
// parameter is read with. GetParameter of "name:version" must answer that
// version's value, or an error.
type ParameterReader interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ ParameterReader = (*ssm.Client)(nil)

// ParameterRef is a parsed ConfigParameterVar: the parameter's name and
// its pinned version.
type ParameterRef struct {
	Name    string
	Version int64
}

// String is the reference as ConfigParameterVar writes it (SSM's
// name:version selector).
func (r ParameterRef) String() string { return r.Name + ":" + strconv.FormatInt(r.Version, 10) }

// ParseParameterRef parses name:version. The version is required: an
// unpinned parameter would let a function started later run with a
// document the others never saw.
func ParseParameterRef(s string) (ParameterRef, error) {
	i := strings.LastIndex(s, ":")
	if i <= 0 {
		return ParameterRef{}, fmt.Errorf("config: %s=%q: want name:version (the parameter pinned to one version)", ConfigParameterVar, s)
	}
	v, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || v < 1 {
		return ParameterRef{}, fmt.Errorf("config: %s=%q: the version %q is not a number ≥ 1", ConfigParameterVar, s, s[i+1:])
	}
	return ParameterRef{Name: s[:i], Version: v}, nil
}

// ReadParameter returns the value of the pinned version of the parameter.
func ReadParameter(ctx context.Context, c ParameterReader, ref ParameterRef) ([]byte, error) {
	out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(ref.String())})
	if err != nil {
		return nil, fmt.Errorf("config: reading the parameter %s: %w", ref, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return nil, fmt.Errorf("config: the parameter %s has no value", ref)
	}
	if out.Parameter.Version != ref.Version {
		return nil, fmt.Errorf("config: the parameter %s answered version %d", ref, out.Parameter.Version)
	}
	return []byte(*out.Parameter.Value), nil
}

// secretDoc is all the runtime secret may hold beside the parameter: the
// TLS material of hosts the parameter names, and registry credentials.
type secretDoc struct {
	Docker struct {
		Hosts []struct {
			Name string            `yaml:"name"`
			TLS  *config.DockerTLS `yaml:"tls"`
		} `yaml:"hosts"`
		Registries []config.Registry `yaml:"registries"`
	} `yaml:"docker"`
}

// JoinSecret joins the runtime secret's material to the parameter's
// document: each docker.hosts entry of the secret gives the tls: of the
// parameter's host of the same name, and the secret's docker.registries
// follow the parameter's. The parameter must hold no secret material
// (an inline TLS key, a registry password, auth.tokens), and the secret
// nothing else; a host named in the secret only is an error. Problems
// name keys, never values.
func JoinSecret(paramName string, param []byte, secretName string, secret []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(param, &doc); err != nil {
		return nil, fmt.Errorf("config: the parameter %s is not YAML: %w", paramName, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	if err := noSecretMaterial(paramName, doc); err != nil {
		return nil, err
	}
	var sec secretDoc
	dec := yaml.NewDecoder(strings.NewReader(string(secret)))
	dec.KnownFields(true)
	if err := dec.Decode(&sec); err != nil {
		return nil, fmt.Errorf("config: the secret %s may hold only docker.hosts[].name, docker.hosts[].tls and docker.registries (details withheld: it may hold secret material)", secretName)
	}
	docker, _ := doc["docker"].(map[string]any)
	if docker == nil {
		docker = map[string]any{}
	}
	hosts, _ := docker["hosts"].([]any)
	for i, sh := range sec.Docker.Hosts {
		at := slices.IndexFunc(hosts, func(h any) bool {
			m, _ := h.(map[string]any)
			return m != nil && m["name"] == sh.Name
		})
		if at < 0 {
			return nil, fmt.Errorf("config: the secret %s gives docker.hosts[%d] (%q) TLS material, but the parameter %s names no such host", secretName, i, sh.Name, paramName)
		}
		host := hosts[at].(map[string]any)
		if _, ok := host["tls"]; ok {
			return nil, fmt.Errorf("config: docker.hosts[%d].tls (%q) is in both the parameter %s and the secret %s: say it once, in the secret", at, sh.Name, paramName, secretName)
		}
		host["tls"] = tlsMap(sh.TLS)
	}
	if len(sec.Docker.Registries) > 0 {
		regs, _ := docker["registries"].([]any)
		for _, r := range sec.Docker.Registries {
			regs = append(regs, map[string]any{"host": r.Host, "username": r.Username, "password": r.Password})
		}
		docker["registries"] = regs
	}
	if len(docker) > 0 {
		doc["docker"] = docker
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("config: joining the parameter %s and the secret %s: %w", paramName, secretName, err)
	}
	return out, nil
}

// FunctionAPI is the api function's name for LoadFunctionConfig: a
// function that reads the parameter but never the secret.
const FunctionAPI = "api"

// FunctionNotify is the notify function's name for LoadFunctionConfig: it
// too reads the parameter (webhooks.allowed_networks) but never the
// secret, and dials no runtime.
const FunctionNotify = "notify"

// readsNoSecret reports whether function reads the parameter without the
// secret, its Docker hosts' TLS material withheld (withheldTLS).
func readsNoSecret(function string) bool {
	return function == FunctionAPI || function == FunctionNotify
}

// withheldTLS marks the tcp:// hosts of a parameter document that have no
// tls: as having TLS material held elsewhere (an empty tls:), for the api
// and notify functions: they never dial a host, and the material, in the secret, is
// not its to read. Without the mark the document would be refused for the
// TLS a tcp:// host needs.
func withheldTLS(param []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(param, &doc); err != nil {
		return nil, fmt.Errorf("config: the parameter is not YAML: %w", err)
	}
	docker, _ := doc["docker"].(map[string]any)
	hosts, _ := docker["hosts"].([]any)
	if len(hosts) == 0 {
		return param, nil
	}
	for _, h := range hosts {
		m, _ := h.(map[string]any)
		if ep, _ := m["endpoint"].(string); m != nil && strings.HasPrefix(ep, "tcp://") && m["tls"] == nil {
			m["tls"] = map[string]any{}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("config: the parameter: %w", err)
	}
	return out, nil
}

// CheckParameter refuses a parameter document that is not YAML or that
// holds secret material (see JoinSecret).
func CheckParameter(paramName string, param []byte) error {
	var doc map[string]any
	if err := yaml.Unmarshal(param, &doc); err != nil {
		return fmt.Errorf("config: the parameter %s is not YAML: %w", paramName, err)
	}
	return noSecretMaterial(paramName, doc)
}

// noSecretMaterial refuses a parameter document that holds what belongs in
// the secret: a parameter is readable by every function that reads the
// configuration, and it is not encrypted.
func noSecretMaterial(paramName string, doc map[string]any) error {
	var found []string
	if auth, _ := doc["auth"].(map[string]any); auth != nil && auth["tokens"] != nil {
		found = append(found, "auth.tokens")
	}
	docker, _ := doc["docker"].(map[string]any)
	hosts, _ := docker["hosts"].([]any)
	for i, h := range hosts {
		m, _ := h.(map[string]any)
		tls, _ := m["tls"].(map[string]any)
		if tls != nil && tls["key"] != nil {
			found = append(found, fmt.Sprintf("docker.hosts[%d].tls.key", i))
		}
	}
	regs, _ := docker["registries"].([]any)
	for i, r := range regs {
		if m, _ := r.(map[string]any); m != nil && m["password"] != nil {
			found = append(found, fmt.Sprintf("docker.registries[%d].password", i))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("config: the parameter %s holds secret material (%s): put it in the runtime secret (RuntimeConfigSecretArn)", paramName, strings.Join(found, ", "))
	}
	return nil
}

// conflicts returns an error naming every key that the document sets (to
// other than its default) and the environment sets to another value: the
// environment would win, and the document's value would be silently
// ignored. A key is set in one place. docCfg is the document loaded with
// only the store and queue variables of the environment, full the document
// with the whole environment.
func conflicts(source string, docCfg, full *config.Config, env func(string) (string, bool)) error {
	def := config.Default()
	var errs []error
	for _, sec := range sections() {
		d, f, z := config.EnvValues(docCfg, sec), config.EnvValues(full, sec), config.EnvValues(def, sec)
		for _, name := range slices.Sorted(maps.Keys(d)) {
			if _, set := env(name); !set || d[name] == z[name] || d[name] == f[name] {
				continue
			}
			errs = append(errs, fmt.Errorf("config: the document in %s sets %s to %q, and the function's environment sets %s=%q (a template parameter): set the key in one place", source, keyOf(name), d[name], name, f[name]))
		}
	}
	return errors.Join(errs...)
}

// sections are the configuration's sections that environment variables
// set, derived from config.EnvKeys so that a new section needs no list here.
func sections() []string {
	var out []string
	for _, name := range config.EnvKeys() {
		sec, _, _ := strings.Cut(strings.TrimPrefix(name, config.EnvPrefix), "_")
		if sec = strings.ToLower(sec); !slices.Contains(out, sec) {
			out = append(out, sec)
		}
	}
	return out
}

// keyOf is the config.yml key an environment variable sets, for messages.
func keyOf(name string) string {
	sec, rest, _ := strings.Cut(strings.TrimPrefix(name, config.EnvPrefix), "_")
	return strings.ToLower(sec) + "." + strings.ToLower(rest)
}

// tlsMap is t as the document's keys, written out field by field so that
// no encoder's redaction can stand in for the material.
func tlsMap(t *config.DockerTLS) map[string]any {
	out := map[string]any{}
	if t == nil {
		return out
	}
	for k, v := range map[string]string{"ca_file": t.CAFile, "cert_file": t.CertFile, "key_file": t.KeyFile, "ca": t.CA, "cert": t.Cert, "key": t.Key} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// onlyInfra is env restricted to the store and queue variables: what the
// stack alone decides. The document loaded with it shows what the document
// itself says of every other key.
func onlyInfra(env func(string) (string, bool)) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if strings.HasPrefix(k, config.EnvPrefix+"STORE_") || strings.HasPrefix(k, config.EnvPrefix+"QUEUE_") {
			return env(k)
		}
		return "", false
	}
}
