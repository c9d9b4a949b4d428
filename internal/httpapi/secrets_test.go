package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store/teststores"
)

const secretTemplate = `{"runtime":"docker","image":"berth-test/busybox:1",
 "env":{"DB_PASSWORD":"hunter2-in-env","PLAIN":"1"},"secret_env":{"API_KEY":"api-key-name"}}`

// TestTemplateValuesHidden: non-admins see which variables a template
// sets, never their values nor its secrets' names; admins see it whole.
func TestTemplateValuesHidden(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newAPI(t, b, 50)
		a.mustStatus(a.do("PUT", "/api/templates/db", admin, secretTemplate, nil), 201)
		for _, tok := range []string{alice, bob} {
			one := a.mustStatus(a.do("GET", "/api/templates/db", tok, "", nil), 200)
			all := a.mustStatus(a.do("GET", "/api/templates", tok, "", nil), 200)
			for _, body := range []string{one.Body.String(), all.Body.String()} {
				for _, hidden := range []string{"hunter2-in-env", "api-key-name"} {
					if strings.Contains(body, hidden) {
						t.Fatalf("a non-admin reads %q: %s", hidden, body)
					}
				}
			}
			got := decode[container.Template](t, one)
			if got.Env["DB_PASSWORD"] != "[redacted]" || got.Env["PLAIN"] != "[redacted]" || got.SecretEnv["API_KEY"] != "[redacted]" {
				t.Fatalf("non-admin view: env %v secret_env %v", got.Env, got.SecretEnv)
			}
		}
		got := decode[container.Template](t, a.mustStatus(a.do("GET", "/api/templates/db", admin, "", nil), 200))
		if got.Env["DB_PASSWORD"] != "hunter2-in-env" || got.SecretEnv["API_KEY"] != "api-key-name" {
			t.Fatalf("admin view: env %v secret_env %v", got.Env, got.SecretEnv)
		}
		// The instance records which secret it needs, never a value.
		in := a.create(alice, `{"template":"db"}`)
		stored, err := a.store.GetInstance(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Spec.SecretEnv["API_KEY"] != "api-key-name" || stored.Spec.Env["API_KEY"] != "" {
			t.Fatalf("spec: env %v secret_env %v", stored.Spec.Env, stored.Spec.SecretEnv)
		}
	})
}

// TestSecretEnvValidated: secret_env is refused at template write when a
// name is malformed or a variable is also set by env or user_env.
func TestSecretEnvValidated(t *testing.T) {
	a := newAPI(t, teststores.All[0], 50)
	cases := []struct{ name, body, field string }{
		{"bad variable", `{"runtime":"docker","image":"x","secret_env":{"1X":"s"}}`, "secret_env.1X"},
		{"bad secret name", `{"runtime":"docker","image":"x","secret_env":{"X":"../etc/passwd"}}`, "secret_env.X"},
		{"empty secret name", `{"runtime":"docker","image":"x","secret_env":{"X":""}}`, "secret_env.X"},
		{"also in env", `{"runtime":"docker","image":"x","env":{"X":"1"},"secret_env":{"X":"s"}}`, "secret_env.X"},
		{"also in user_env", `{"runtime":"docker","image":"x","user_env":["X"],"secret_env":{"X":"s"}}`, "secret_env.X"},
	}
	for _, tc := range cases {
		r := a.do("PUT", "/api/templates/s", admin, tc.body, nil)
		if r.Code != 422 || !problemNames(r, tc.field) {
			t.Errorf("%s: %d, want 422 naming %s: %s", tc.name, r.Code, tc.field, r.Body)
		}
	}
}
