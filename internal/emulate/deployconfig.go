package emulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/berth-io/berth/internal/configstandin"
	"github.com/berth-io/berth/internal/samtemplate"
)

// The template parameters a deployment's configuration is given by.
const (
	paramConfigName    = "ConfigParameterName"
	paramConfigVersion = "ConfigVersion"
	paramRuntimeSecret = "RuntimeConfigSecretArn"
)

// deployConfig is BERTH_CONFIG as a deployment holds it: the non-secret
// document in an SSM parameter, the secret material in a Secrets Manager
// secret, both served by a stand-in that answers each function only what
// the template's policies let it read.
type deployConfig struct {
	store     *configstandin.Store
	parameter string // name
	version   int64
	secretARN string // "" without secret material
	// stack is the stack whose policies decide; set before any function starts.
	stack *samtemplate.Stack
	srvs  []*http.Server
}

// newDeployConfig splits the file at path (splitConfig) and puts its parts
// in a stand-in, under names of the stack's.
func newDeployConfig(path, stackName, region string) (*deployConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("BERTH_CONFIG: %w", err)
	}
	param, secret, err := splitConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("BERTH_CONFIG %s: %w", path, err)
	}
	d := &deployConfig{parameter: "/" + stackName + "/config"}
	d.store = configstandin.New(region, samtemplate.DefaultAccountID, d.allows)
	d.version = d.store.PutParameter(d.parameter, string(param))
	if secret != nil {
		d.secretARN = fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-runtime", region, samtemplate.DefaultAccountID, stackName)
		d.store.PutSecret(d.secretARN, string(secret))
	}
	return d, nil
}

// parameters are the template parameters that name the configuration.
func (d *deployConfig) parameters() map[string]string {
	out := map[string]string{paramConfigName: d.parameter, paramConfigVersion: strconv.FormatInt(d.version, 10)}
	if d.secretARN != "" {
		out[paramRuntimeSecret] = d.secretARN
	}
	return out
}

// allows is the template's word: the function's policies, as IAM reads them.
func (d *deployConfig) allows(principal, action, resource string) bool {
	f := d.stack.Functions[principal]
	return f != nil && f.Allows(action, resource)
}

// readers are the functions of the stack that may read what names, for the log.
func (d *deployConfig) readers(action, resource string) []string {
	var out []string
	for _, id := range d.stack.FunctionIDs() {
		if d.allows(id, action, resource) {
			out = append(out, id)
		}
	}
	return out
}

// endpoint serves function's calls on a listener of its own (so that the
// caller is known as IAM knows it, by its role) and returns its URL.
func (d *deployConfig) endpoint(ctx context.Context, function string) (string, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("%s: the configuration stand-in: %w", function, err)
	}
	srv := &http.Server{Handler: d.store.Handler(function), ReadHeaderTimeout: 10 * time.Second}
	d.srvs = append(d.srvs, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// log says where the configuration is and who may read it.
func (d *deployConfig) log(log *slog.Logger) {
	log.Info("configuration parameter", "parameter", d.parameter, "version", d.version,
		"readers", d.readers(configstandin.ActionGetParameter, d.store.ParameterARN(d.parameter)))
	if d.secretARN != "" {
		log.Info("configuration secret", "secret", d.secretARN, "readers", d.readers(configstandin.ActionGetSecretValue, d.secretARN))
	}
}

// close stops the endpoints.
func (d *deployConfig) close() {
	for _, s := range d.srvs {
		_ = s.Close()
	}
}

// splitConfig splits a `berth serve` config.yml into what a deployment
// keeps in the configuration parameter and what it keeps in the runtime
// secret (wiring.JoinSecret puts them back together): docker.hosts[].tls
// by host name and docker.registries go to the secret (nil when there is
// none). What the stack itself decides is left out: store: and queue:
// (its tables and queues), docker.scope (its name), and auth.tokens (the
// front door's, never a function's).
func splitConfig(raw []byte) (param, secret []byte, err error) {
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("not YAML: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	delete(doc, "store")
	delete(doc, "queue")
	if auth, _ := doc["auth"].(map[string]any); auth != nil {
		delete(auth, "tokens")
	}
	var secretHosts []any
	var registries any
	if docker, _ := doc["docker"].(map[string]any); docker != nil {
		delete(docker, "scope")
		hosts, _ := docker["hosts"].([]any)
		for i, h := range hosts {
			host, _ := h.(map[string]any)
			if host == nil {
				return nil, nil, fmt.Errorf("docker.hosts[%d] is not a mapping", i)
			}
			if tls, ok := host["tls"]; ok {
				if host["name"] == nil {
					return nil, nil, errors.New("a docker host with tls: has no name to join it by")
				}
				secretHosts = append(secretHosts, map[string]any{"name": host["name"], "tls": tls})
				delete(host, "tls")
			}
		}
		registries = docker["registries"]
		delete(docker, "registries")
	}
	if param, err = yaml.Marshal(doc); err != nil {
		return nil, nil, err
	}
	if secretHosts == nil && registries == nil {
		return param, nil, nil
	}
	sd := map[string]any{}
	if secretHosts != nil {
		sd["hosts"] = secretHosts
	}
	if registries != nil {
		sd["registries"] = registries
	}
	if secret, err = yaml.Marshal(map[string]any{"docker": sd}); err != nil {
		return nil, nil, err
	}
	return param, secret, nil
}
