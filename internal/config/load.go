package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load returns the configuration from the file at path (none when path is
// empty) with the environment applied on top, validated. env looks up a
// variable, as os.LookupEnv does; nil means no environment.
//
// All problems are reported together (errors.Join of *FieldError), so one
// start-up attempt shows everything to fix. A file that cannot be read or
// parsed as YAML at all is a single error.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	if path == "" {
		return load("", nil, env)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return load(path, data, env)
}

// LoadData is Load of a document held in memory rather than a file, such
// as one read from a secret store; name stands for the path in messages.
// Its keys are the file's, with the same precedence under the environment.
func LoadData(name string, data []byte, env func(string) (string, bool)) (*Config, error) {
	return load(name, data, env)
}

func load(path string, data []byte, env func(string) (string, bool)) (*Config, error) {
	cfg := defaults()
	src := newSources()
	var errs []error
	if path != "" {
		fileErrs, err := decodeFile(path, data, cfg, src)
		if err != nil {
			return nil, err
		}
		errs = append(errs, fileErrs...)
	}
	if env != nil {
		errs = append(errs, applyEnv(cfg, env, src)...)
	}
	cfg.resolve()
	errs = append(errs, validate(cfg, src)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeFile decodes data, the file at path, over cfg. The returned error is fatal
// (unreadable, not YAML); the returned slice holds per-key errors, for
// which decoding went on.
func decodeFile(path string, data []byte, cfg *Config, src *sources) ([]error, error) {
	// The node tree is only for naming keys: yaml.v3 reports problems by
	// line, and people think in keys.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	lines := indexKeys(&root, path, src)

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	if errors.Is(err, io.EOF) {
		return nil, nil // an empty file: defaults
	}
	var errs []error
	var te *yaml.TypeError
	switch {
	case errors.As(err, &te):
		for _, msg := range te.Errors {
			errs = append(errs, lines.fieldError(path, msg))
		}
	case err != nil:
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		errs = append(errs, &FieldError{Source: path, Err: errors.New("more than one YAML document")})
	}
	return errs, nil
}

// lineKeys maps a line of the file to the keys written on it, outermost
// first, with their scalar values.
type lineKeys map[int][]keyAt

type keyAt struct {
	key   string
	value string // the scalar value, "" for a mapping or sequence
}

// indexKeys walks the node tree, recording each key's line in src and in
// the returned index. Token keys are secrets: they are indexed by position
// (auth.tokens[0]) so that no error message or source ever quotes one.
func indexKeys(root *yaml.Node, path string, src *sources) lineKeys {
	lines := make(lineKeys)
	record := func(key string, line int, v *yaml.Node) {
		src.set(key, path+":"+strconv.Itoa(line))
		k := keyAt{key: key}
		if v.Kind == yaml.ScalarNode {
			k.value = v.Value
		}
		lines[line] = append(lines[line], k)
	}
	var walk func(n *yaml.Node, key string)
	walk = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, key)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				var name string
				switch {
				case key == "auth.tokens":
					name = fmt.Sprintf("%s[%d]", key, i/2)
				case key == "":
					name = k.Value
				default:
					name = key + "." + k.Value
				}
				record(name, k.Line, v)
				walk(v, name)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				name := fmt.Sprintf("%s[%d]", key, i)
				record(name, c.Line, c)
				walk(c, name)
			}
		}
	}
	walk(root, "")
	return lines
}

var (
	lineMsg      = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	ownKey       = regexp.MustCompile(`(?s)^([a-z_]+(?:\.[a-z_]+|\[\d+\])+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	fieldTwice   = regexp.MustCompile(`^field (\S+) already set in type \S+$`)
	mapKeyTwice  = regexp.MustCompile(`^mapping key (".*") already defined at line (\d+)$`)
	badValue     = regexp.MustCompile("^cannot unmarshal \\S+ `(.*)` into ")
)

const (
	intoDuration = " into time.Duration"
	durationHint = ` (want a Go duration string such as "30s" or "5m")`
)

// fieldError turns one of yaml.v3's "line N: message" errors into a
// FieldError naming the key written on that line. Our own unmarshalers
// (Tokens) name the key themselves: "line N: auth.tokens[2]: message".
func (l lineKeys) fieldError(path, msg string) *FieldError {
	m := lineMsg.FindStringSubmatch(msg)
	if m == nil {
		return &FieldError{Source: path, Err: errors.New(msg)}
	}
	line, _ := strconv.Atoi(m[1])
	msg = m[2]
	key := ""
	if keys := l[line]; len(keys) > 0 {
		key = keys[len(keys)-1].key // the innermost key on the line
	}
	if f := ownKey.FindStringSubmatch(msg); f != nil {
		key, msg = f[1], f[2]
	} else if f := unknownField.FindStringSubmatch(msg); f != nil {
		key, msg = l.named(line, f[1], key), "unknown key"
	} else if f := fieldTwice.FindStringSubmatch(msg); f != nil {
		key, msg = l.named(line, f[1], key), "key given twice"
	} else if f := mapKeyTwice.FindStringSubmatch(msg); f != nil {
		name, _ := strconv.Unquote(f[1])
		key, msg = l.named(line, name, key), "key given twice (first at line "+f[2]+")"
	} else if f := badValue.FindStringSubmatch(msg); f != nil {
		key = l.valued(line, f[1], key)
		if strings.HasSuffix(msg, intoDuration) {
			msg += durationHint
		}
	}
	return &FieldError{Key: key, Source: path + ":" + m[1], Err: errors.New(msg)}
}

// named picks, among the keys on line, the one whose last element is name
// (several keys share a line in flow style: {a: 1, b: 2}).
func (l lineKeys) named(line int, name, fallback string) string {
	for _, k := range l[line] {
		if k.key == name || strings.HasSuffix(k.key, "."+name) {
			return k.key
		}
	}
	return fallback
}

// valued picks, among the keys on line, the one whose value yaml.v3
// quoted (which it shortens to 7 characters and "..." beyond 10).
func (l lineKeys) valued(line int, quoted, fallback string) string {
	prefix, cut := strings.CutSuffix(quoted, "...")
	for _, k := range l[line] {
		if k.value == quoted || (cut && strings.HasPrefix(k.value, prefix)) {
			return k.key
		}
	}
	return fallback
}
