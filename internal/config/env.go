package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvPrefix starts every berth environment variable.
const EnvPrefix = "BERTH_"

// envVar is one key that an environment variable can set.
type envVar struct {
	name  string // BERTH_CONTAINER_MAX_ATTEMPTS
	key   string // container.max_attempts
	index []int  // field index path from Config
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

// envVars derives the variables from the yaml tags of Config's sections,
// so a key added to a section gets its variable without a list to keep in
// step. Only scalar fields qualify; structured keys are YAML-only.
var envVars = sync.OnceValue(func() []envVar {
	var out []envVar
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		sec := ct.Field(i)
		secName := yamlName(sec)
		if secName == "" || sec.Type.Kind() != reflect.Struct {
			continue
		}
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			name := yamlName(f)
			if name == "" || !f.IsExported() || !envSettable(f.Type) {
				continue
			}
			out = append(out, envVar{
				name:  EnvPrefix + strings.ToUpper(secName+"_"+name),
				key:   secName + "." + name,
				index: []int{i, j},
			})
		}
	}
	return out
})

// yamlName returns the key of a struct field, "" for fields YAML skips.
func yamlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if tag == "-" {
		return ""
	}
	if tag == "" {
		return strings.ToLower(f.Name) // yaml.v3's own default
	}
	return tag
}

// envSettable reports whether a value of t can be written in one variable.
func envSettable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// EnvKeys returns every environment variable Load reads, in the order of
// the keys in Config.
func EnvKeys() []string {
	vars := envVars()
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.name
	}
	return out
}

// UnknownEnv returns the BERTH_ variables in environ (os.Environ's
// "NAME=value" form) that Load does not read, apart from those in allow
// (a binary's own, such as a config path). Load cannot see a misspelt
// variable through a lookup function; a binary calls this to warn of one.
func UnknownEnv(environ []string, allow ...string) []string {
	known := EnvKeys()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !slices.Contains(known, name) && !slices.Contains(allow, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// applyEnv sets every key whose variable env has. A value that does not
// parse leaves the key as it was and is reported.
func applyEnv(cfg *Config, env func(string) (string, bool), src *sources) []error {
	var errs []error
	root := reflect.ValueOf(cfg).Elem()
	for _, v := range envVars() {
		s, ok := env(v.name)
		if !ok {
			continue
		}
		if err := setFromString(root.FieldByIndex(v.index), s); err != nil {
			errs = append(errs, &FieldError{Key: v.key, Source: v.name, Err: err})
			continue
		}
		src.override(v.key, v.name)
	}
	return errs
}

// setFromString parses s into field. An empty string is an empty string
// or list; for other types it is an error, not "unset", since a variable
// that is present is meant to say something.
func setFromString(field reflect.Value, s string) error {
	t := field.Type()
	switch {
	case t == durationType:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want a Go duration string such as \"30s\" or \"5m\", got %q", s)
		}
		field.SetInt(int64(d))
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		field.SetBool(b)
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, t.Bits())
		if err != nil {
			return fmt.Errorf("want an integer, got %q: %w", s, numErr(err))
		}
		field.SetInt(n)
	case t.Kind() == reflect.String:
		field.SetString(s)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		list := reflect.MakeSlice(t, 0, strings.Count(s, ",")+1)
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = reflect.Append(list, reflect.ValueOf(item).Convert(t.Elem()))
			}
		}
		field.Set(list)
	default:
		// envVars only offers settable types; reaching here is a bug.
		return fmt.Errorf("type %s cannot be set from the environment", t)
	}
	return nil
}

// numErr returns strconv's reason ("invalid syntax", "value out of
// range") without its repetition of the input.
func numErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// EnvValues returns every key of the named section (e.g. "container") as
// the environment variable that sets it, with its value in cfg written as
// that variable takes it (durations "5m0s", lists comma-separated), so that
// Load of those variables gives the same values back. Secret keys
// (server.metrics_token) are left out: their value would print as
// "[redacted]", and a secret is not passed on in the environment.
func EnvValues(cfg *Config, section string) map[string]string {
	out := map[string]string{}
	root := reflect.ValueOf(cfg).Elem()
	for _, v := range envVars() {
		sec, _, _ := strings.Cut(v.key, ".")
		f := root.FieldByIndex(v.index)
		if sec != section || f.Type() == secretType {
			continue
		}
		switch {
		case f.Type() == durationType:
			out[v.name] = time.Duration(f.Int()).String()
		case f.Kind() == reflect.Slice:
			items := make([]string, f.Len())
			for i := range items {
				items[i] = f.Index(i).String()
			}
			out[v.name] = strings.Join(items, ",")
		default:
			out[v.name] = fmt.Sprint(f.Interface())
		}
	}
	return out
}
