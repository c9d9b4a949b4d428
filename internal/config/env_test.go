package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// yamlOnly are the structured keys, which no variable can set (doc.go).
var yamlOnly = []string{"docker.hosts", "docker.registries", "auth.tokens", "kubernetes.clusters", "quotas.default"}

// TestEveryDocumentedKeyHasAVariable ties the example file, which
// documents the keys, to EnvKeys: every key written there has a variable
// unless it is YAML-only, and every variable's key is written there.
func TestEveryDocumentedKeyHasAVariable(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	root := doc.Content[0]
	for i := 0; i < len(root.Content); i += 2 {
		sec, body := root.Content[i].Value, root.Content[i+1]
		for j := 0; j < len(body.Content); j += 2 {
			documented = append(documented, sec+"."+body.Content[j].Value)
		}
	}
	keys := EnvKeys()
	for _, k := range documented {
		if slices.Contains(yamlOnly, k) {
			continue
		}
		if name := "BERTH_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_")); !slices.Contains(keys, name) {
			t.Errorf("documented key %s has no variable %s", k, name)
		}
	}
	for _, v := range envVars() {
		if !slices.Contains(documented, v.key) {
			t.Errorf("%s sets %s, which %s does not document", v.name, v.key, examplePath)
		}
	}
	for _, k := range yamlOnly {
		if slices.Contains(keys, "BERTH_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))) {
			t.Errorf("YAML-only key %s has a variable", k)
		}
	}
}

func TestEnvKeysNames(t *testing.T) {
	keys := EnvKeys()
	for _, want := range []string{
		"BERTH_CONTAINER_CREATE_QUEUE_MAX_PENDING", "BERTH_SERVER_ADDR",
		"BERTH_STORE_BACKEND", "BERTH_QUEUE_CREATE_QUEUE_URL", "BERTH_AUTH_ADMIN_GROUP",
	} {
		if !slices.Contains(keys, want) {
			t.Errorf("EnvKeys() lacks %s", want)
		}
	}
	if seen := slices.Compact(slices.Sorted(slices.Values(keys))); len(seen) != len(keys) {
		t.Errorf("EnvKeys() has duplicates: %v", keys)
	}
	keys[0] = "mutated"
	if EnvKeys()[0] == "mutated" {
		t.Error("EnvKeys shares its slice")
	}
}

// stringValues are valid non-default values for the string keys that
// validation constrains; other strings take "override-value".
var stringValues = map[string]string{
	"container.dag_node_cleanup_on_failed":       "delete",
	"container.dag_node_cleanup_on_dag_finished": "none",
	"container.workspace_root":                   "/data/workspaces",
	"server.addr":                                "0.0.0.0:9090",
	"server.metrics":                             "stdout",
	"store.backend":                              "dynamodb",
	"queue.backend":                              "sqs",
	"secrets.source":                             "env",
	"queue.create_queue_url":                     "https://sqs.eu-west-1.amazonaws.com/123456789012/berth-create",
	"queue.lifecycle_queue_url":                  "https://sqs.eu-west-1.amazonaws.com/123456789012/berth-lifecycle",
	"queue.notify_queue_url":                     "https://sqs.eu-west-1.amazonaws.com/123456789012/berth-notify",
	"fleet.reconcile_shard_queue_url":            "https://sqs.eu-west-1.amazonaws.com/123456789012/berth-reconcile-shards",
	"fleet.watch_shard_queue_url":                "https://sqs.eu-west-1.amazonaws.com/123456789012/berth-watch-shards",
	"auth.oidc_issuer":                           "https://idp.example.com",
	"auth.oidc_client_id":                        "console-client",
}

// companions are the other variables a value needs to be valid.
var companions = map[string]map[string]string{
	"auth.oidc_issuer":    {"BERTH_AUTH_OIDC_CLIENT_ID": "console-client"},
	"auth.oidc_client_id": {"BERTH_AUTH_OIDC_ISSUER": "https://idp.example.com"},
	"queue.backend": {
		"BERTH_QUEUE_CREATE_QUEUE_URL":    stringValues["queue.create_queue_url"],
		"BERTH_QUEUE_LIFECYCLE_QUEUE_URL": stringValues["queue.lifecycle_queue_url"],
	},
}

// sliceValues are valid variable values of list keys whose items are not
// runtime names, with the list each decodes to.
var sliceValues = map[string]struct {
	raw  string
	want []string
}{
	"webhooks.allowed_networks": {"127.0.0.0/8, fd00::/8,", []string{"127.0.0.0/8", "fd00::/8"}},
}

// TestEnvOverrides sets each variable alone, with a valid value that
// differs from the default, and checks that it lands in its key.
func TestEnvOverrides(t *testing.T) {
	for _, v := range envVars() {
		t.Run(v.name, func(t *testing.T) {
			def := reflect.ValueOf(defaults()).Elem().FieldByIndex(v.index)
			raw, want := overrideFor(t, v.key, def)
			env := map[string]string{v.name: raw}
			for k, val := range companions[v.key] {
				env[k] = val
			}
			// A file value too: the variable must win over it.
			path := writeFile(t, fileSetting(v.key, def))
			cfg, err := Load(path, envOf(env))
			if err != nil {
				t.Fatalf("Load with %s=%q: %v", v.name, raw, err)
			}
			got := reflect.ValueOf(cfg).Elem().FieldByIndex(v.index).Interface()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%q: %s = %#v, want %#v", v.name, raw, v.key, got, want)
			}
		})
	}
}

// overrideFor returns a variable value for key and the value it must
// decode to, chosen by the field's type.
func overrideFor(t *testing.T, key string, def reflect.Value) (string, any) {
	t.Helper()
	switch {
	case def.Type() == durationType:
		return "42s", 42 * time.Second
	case def.Kind() == reflect.Bool:
		b := !def.Bool()
		if b {
			return "true", true
		}
		return "false", false
	case def.Kind() == reflect.Int:
		return " 7 ", 7
	case def.Kind() == reflect.Int64:
		return "7", int64(7)
	case def.Kind() == reflect.String:
		s, ok := stringValues[key]
		if !ok {
			s = "override-value"
		}
		return s, reflect.ValueOf(s).Convert(def.Type()).Interface()
	case def.Kind() == reflect.Slice:
		if raw, ok := sliceValues[key]; ok {
			return raw.raw, raw.want
		}
		return "docker, kubernetes,", []string{"docker", "kubernetes"}
	}
	t.Fatalf("%s: no test value for type %s", key, def.Type())
	return "", nil
}

// fileSetting writes key's default into a file, so that the override is
// over an explicit file value rather than only over the default.
func fileSetting(key string, def reflect.Value) string {
	sec, name, _ := strings.Cut(key, ".")
	out, err := yaml.Marshal(map[string]map[string]any{sec: {name: yamlValue(def)}})
	if err != nil {
		panic(err)
	}
	return string(out)
}

func yamlValue(v reflect.Value) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	return v.Interface()
}

func TestEnvEmptyValues(t *testing.T) {
	cfg, err := Load("", envOf(map[string]string{"BERTH_STORE_REGION": ""}))
	if err != nil || cfg.Store.Region != "" {
		t.Fatalf("empty string variable: %v, %q", err, cfg.Store.Region)
	}
	_, err = Load("", envOf(map[string]string{"BERTH_CONTAINER_ALLOWED_RUNTIMES": " , "}))
	if err == nil || !strings.Contains(err.Error(), "container.allowed_runtimes: must name at least one runtime") {
		t.Fatalf("empty list: %v", err)
	}
	_, err = Load("", envOf(map[string]string{"BERTH_CONTAINER_MAX_ATTEMPTS": ""}))
	if err == nil || !strings.Contains(err.Error(), `want an integer, got ""`) {
		t.Fatalf("empty integer: %v", err)
	}
}

func TestUnknownEnv(t *testing.T) {
	environ := []string{
		"PATH=/bin", "BERTH_SERVER_ADDR=:1", "BERTH_SERVER_ADRR=:2",
		"BERTH_CONFIG=/etc/berth.yml", "BERTH_CONTAINER_MAX_PENDING=3",
	}
	got := UnknownEnv(environ, "BERTH_CONFIG")
	want := []string{"BERTH_CONTAINER_MAX_PENDING", "BERTH_SERVER_ADRR"}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownEnv = %v, want %v", got, want)
	}
}

// TestEnvValuesRoundTrip: the variables EnvValues writes load back into
// the same section.
func TestEnvValuesRoundTrip(t *testing.T) {
	cfg := Default()
	cfg.Container.MaxAttempts = 7
	cfg.Container.CreateStartTimeout = 90 * time.Second
	cfg.Container.AllowedRuntimes = []string{"docker", "kubernetes"}
	vals := EnvValues(cfg, "container")
	if vals["BERTH_CONTAINER_MAX_ATTEMPTS"] != "7" || vals["BERTH_CONTAINER_CREATE_START_TIMEOUT"] != "1m30s" ||
		vals["BERTH_CONTAINER_ALLOWED_RUNTIMES"] != "docker,kubernetes" {
		t.Fatalf("EnvValues: %v", vals)
	}
	back, err := Load("", func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Container, cfg.Container) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back.Container, cfg.Container)
	}
}
