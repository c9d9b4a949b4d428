package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/berth-io/berth/internal/client"
)

func cliTemplateCommands() []cliCommand {
	return []cliCommand{
		{group: "templates", name: "put", synopsis: "[NAME] -f FILE|-",
			summary: "create or replace a template (admins only)",
			details: `FILE holds the template as JSON or YAML (by its extension, .json, .yaml or .yml; otherwise
JSON if it starts with '{'); "-" reads standard input. NAME defaults to the file's "name".
The server validates it (image set, runtime known, volumes inside the allowed roots). In YAML,
quote values the API wants as strings: cpu: "0.5".`,
			run: cliTemplatesPut},
		{group: "templates", name: "get", synopsis: "NAME", summary: "show a template (-o json: the whole of it)", run: cliTemplatesGet},
		{group: "templates", name: "list", synopsis: "", summary: "list the templates", run: cliTemplatesList},
		{group: "templates", name: "delete", synopsis: "NAME",
			summary: "delete a template (admins only; containers made from it keep their spec)", run: cliTemplatesDelete},
		{group: "templates", name: "binds", synopsis: "list | retire ID",
			summary: "the bind ledger: every bind source any template ever stored (admins only)",
			details: `list shows every pattern, whether some template ever mounted it writable, and which templates
stored it. retire ID removes an entry (or, while a template mounts it read-only, its writable
flag), once the host directories under it were cleaned: see docs/deploy.md. The server refuses
while a template or a container still mounts it writable.`,
			run: cliTemplatesBinds},
	}
}

func cliTemplatesBinds(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	pos, err := app.parse(fs, args, "list|retire", "[ID]")
	if err != nil {
		return err
	}
	pos = append(pos, "")
	if (pos[0] != "list" || pos[1] != "") && (pos[0] != "retire" || pos[1] == "") {
		return cliUsagef("want: berth templates binds list | retire ID")
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	switch {
	case pos[0] == "list":
		l, err := c.BindLedger(ctx)
		if err != nil {
			return err
		}
		if app.jsonOutput() {
			return cliWriteJSON(app.stdout, l)
		}
		fmt.Fprintf(app.stdout, "%-12s  %-8s  %-6s  %-40s  %s\n", "ID", "WRITABLE", "SHARED", "PATTERN", "TEMPLATES")
		for _, e := range l.Entries {
			fmt.Fprintf(app.stdout, "%-12s  %-8v  %-6v  %-40s  %s\n", e.ID, e.Writable, e.Shared, cliClean(e.Pattern), cliClean(strings.Join(e.Templates, ",")))
		}
		return nil
	default:
		e, err := c.RetireBind(ctx, pos[1])
		if err != nil {
			return err
		}
		if app.jsonOutput() {
			return cliWriteJSON(app.stdout, e)
		}
		fmt.Fprintf(app.stdout, "bind ledger entry %s (%s) retired\n", cliClean(e.ID), strconv.Quote(cliClean(e.Pattern)))
		return nil
	}
}

// cliMaxTemplateFile bounds what is read of a template file (the API takes
// at most 64 KiB).
const cliMaxTemplateFile = 1 << 20

func cliTemplatesPut(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	file := fs.String("f", "", "template `file`, JSON or YAML; - for standard input (required)")
	fs.StringVar(file, "file", "", "same as -f")
	pos, err := app.parse(fs, args, "[NAME]")
	if err != nil {
		return err
	}
	if *file == "" {
		return cliUsagef("-f FILE is required")
	}
	body, err := app.readTemplate(*file)
	if err != nil {
		return err
	}
	var name string
	if len(pos) == 1 {
		name = pos[0]
	} else {
		var doc struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(body, &doc)
		if doc.Name == "" {
			return cliUsagef("missing NAME, and the file has no \"name\"")
		}
		name = doc.Name
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	t, created, err := c.PutTemplate(ctx, name, body)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, t)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	fmt.Fprintf(app.stdout, "template %s %s (version %d)\n", strconv.Quote(cliClean(t.Name)), verb, t.Version)
	return nil
}

// readTemplate reads a template file (or stdin) and returns it as JSON.
// JSON is passed through untouched, so that the server alone judges its
// fields; YAML is converted.
func (app *cliApp) readTemplate(path string) (json.RawMessage, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(app.stdin, cliMaxTemplateFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, cliMaxTemplateFile+1))
			_ = f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the template: %w", err)
	}
	if len(data) > cliMaxTemplateFile {
		return nil, fmt.Errorf("reading the template: %s is larger than %d bytes", path, cliMaxTemplateFile)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("the template file %s is empty", path)
	}
	isJSON := trimmed[0] == '{'
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		isJSON = true
	case ".yaml", ".yml":
		isJSON = false
	}
	if isJSON {
		var v map[string]any
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, fmt.Errorf("the template file %s is not a JSON object: %w", path, err)
		}
		return json.RawMessage(trimmed), nil
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("the template file %s is not valid YAML: %w", path, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("the template file %s must hold a mapping (an object) of string keys", path)
	}
	out, err := json.Marshal(v)
	if err != nil {
		var ute *json.UnsupportedTypeError
		if errors.As(err, &ute) {
			return nil, fmt.Errorf("the template file %s has a mapping whose keys are not all strings", path)
		}
		return nil, fmt.Errorf("converting the template file %s to JSON: %w", path, err)
	}
	return out, nil
}

func cliTemplatesGet(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	arg, c, err := app.forArg(fs, args, "NAME")
	if err != nil {
		return err
	}
	t, err := c.GetTemplate(ctx, arg)
	if err != nil {
		return err
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, t)
	}
	return cliPrintTemplates(app.stdout, []client.Template{t})
}

func cliTemplatesList(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	if _, err := app.parse(fs, args); err != nil {
		return err
	}
	c, err := app.client()
	if err != nil {
		return err
	}
	ts, err := c.ListTemplates(ctx)
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []client.Template{}
	}
	if app.jsonOutput() {
		return cliWriteJSON(app.stdout, client.Page[client.Template]{Items: ts})
	}
	return cliPrintTemplates(app.stdout, ts)
}

func cliTemplatesDelete(ctx context.Context, app *cliApp, fs *flag.FlagSet, args []string) error {
	arg, c, err := app.forArg(fs, args, "NAME")
	if err != nil {
		return err
	}
	if err := c.DeleteTemplate(ctx, arg); err != nil {
		return err
	}
	if !app.jsonOutput() {
		fmt.Fprintf(app.stdout, "template %s deleted\n", strconv.Quote(cliClean(arg)))
	}
	return nil
}
