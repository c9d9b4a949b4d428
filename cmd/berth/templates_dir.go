package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-io/berth/internal/container"
)

// readTemplates decodes every <name>.json of dir, strictly (an unknown
// field is an error, as in an API PUT); a template without a name takes
// its file's.
func readTemplates(dir string) ([]container.Template, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make([]container.Template, 0, len(files))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var t container.Template
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("template %s: %w", file, err)
		}
		if t.Name == "" {
			t.Name = strings.TrimSuffix(filepath.Base(file), ".json")
		}
		out = append(out, t)
	}
	return out, nil
}
