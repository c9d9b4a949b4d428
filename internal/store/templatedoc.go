package store

import (
	"encoding/json"
	"fmt"

	"github.com/berth-io/berth/internal/container"
)

// TemplateDoc is the identity of a stored template: its JSON without the
// image status (which the store keeps apart and changes without a put).
// Two reads of a template give the same TemplateDoc exactly when no put or
// delete came between them: a put moves Version and UpdatedAt, and a
// template deleted and put again is a different document unless it is the
// same one. CreateParams.Template is checked by it.
func TemplateDoc(t container.Template) ([]byte, error) {
	t.ImageStatus = nil
	doc, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode template %q: %w", t.Name, err)
	}
	return doc, nil
}
