package store

// templateRule: a create built from a template the caller read earlier is
// made only if that template is still the stored one
// (CreateParams.Template).
type templateRule struct{ noRule }

func (templateRule) create(w *Write, p CreateParams) error {
	if p.Template != nil {
		w.add(TemplateUnchanged{Template: *p.Template})
	}
	return nil
}
