package dockersim

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moby/moby/api/types/events"
)

// filters are a call's filters parameter: term → accepted values. A term
// matches when any of its values does; every term must match.
type filters map[string]map[string]bool

func parseFilters(v string) (filters, error) {
	if v == "" {
		return nil, nil
	}
	var f filters
	if err := json.Unmarshal([]byte(v), &f); err != nil {
		return nil, fmt.Errorf("filters: %w", err)
	}
	return f, nil
}

// anyOf reports whether term is absent or one of its values satisfies ok.
func (f filters) anyOf(term string, ok func(string) bool) bool {
	vals, present := f[term]
	if !present || len(vals) == 0 {
		return true
	}
	for v := range vals {
		if ok(v) {
			return true
		}
	}
	return false
}

// labels reports whether labels have every label filter ("key" or
// "key=value"): unlike other terms, each label value must match.
func (f filters) labels(labels map[string]string) bool {
	for v := range f["label"] {
		k, want, hasValue := strings.Cut(v, "=")
		got, ok := labels[k]
		if !ok || (hasValue && got != want) {
			return false
		}
	}
	return true
}

// matchEvent applies the event filters: type, event, container (id or
// name), label.
func (f filters) matchEvent(m events.Message) bool {
	return f.anyOf("type", func(v string) bool { return v == string(m.Type) }) &&
		f.anyOf("event", func(v string) bool { return v == string(m.Action) }) &&
		f.anyOf("container", func(v string) bool { return v == m.Actor.ID || v == m.Actor.Attributes["name"] }) &&
		f.labels(m.Actor.Attributes)
}

// matchContainer applies the list filters: id (prefix), name (substring),
// status, label.
func (f filters) matchContainer(c *simContainer) bool {
	return f.anyOf("id", func(v string) bool { return strings.HasPrefix(c.id, v) }) &&
		f.anyOf("name", func(v string) bool { return strings.Contains(c.name, strings.TrimPrefix(v, "/")) }) &&
		f.anyOf("status", func(v string) bool { return v == string(c.status) }) &&
		f.labels(c.config.Labels)
}
