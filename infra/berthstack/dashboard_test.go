package berthstack

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-io/berth/internal/metrics"
)

// repoRoot is the repository, seen from this package.
const repoRoot = "../.."

// emitted are the metrics berth's code emits: metric name → the dimension sets (sorted names,
// the emitter's base ones included) it is emitted with.
type emitted map[string][]string

// emittedMetrics reads them from the code: every call of Count, Duration or Emit on a metrics
// emitter (a field or variable named metrics/Metrics) under internal/, functions/ and cmd/,
// with the name a string constant (or a function of the package returning constants, as
// opMetric) and the dimension names the constants at even positions after the value; plus the
// dimensions every function's emitter adds (wiring.Metrics).
func emittedMetrics(t *testing.T) emitted {
	t.Helper()
	fset := token.NewFileSet()
	type pkg struct {
		name   string
		consts map[string]string
		funcs  map[string]*ast.FuncDecl
		files  []*ast.File
	}
	pkgs := map[string]*pkg{}
	for _, top := range []string{"internal", "functions", "cmd"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(path, "testdata") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			dir := filepath.Dir(path)
			p := pkgs[dir]
			if p == nil {
				p = &pkg{name: f.Name.Name, consts: map[string]string{}, funcs: map[string]*ast.FuncDecl{}}
				pkgs[dir] = p
			}
			p.files = append(p.files, f)
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.GenDecl:
					for _, spec := range decl.Specs {
						if vs, ok := spec.(*ast.ValueSpec); ok && decl.Tok == token.CONST {
							for i, n := range vs.Names {
								if i < len(vs.Values) {
									if s, ok := stringLit(vs.Values[i]); ok {
										p.consts[n.Name] = s
									}
								}
							}
						}
					}
				case *ast.FuncDecl:
					if decl.Recv == nil {
						p.funcs[decl.Name.Name] = decl
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("reading the code: %v", err)
		}
	}
	byName := map[string]*pkg{}
	for _, p := range pkgs {
		byName[p.name] = p
	}
	// strs is what an expression of package p evaluates to: a constant, or every constant a
	// package function returns.
	var strs func(p *pkg, e ast.Expr) []string
	strs = func(p *pkg, e ast.Expr) []string {
		if s, ok := stringLit(e); ok {
			return []string{s}
		}
		switch e := e.(type) {
		case *ast.Ident:
			if s, ok := p.consts[e.Name]; ok {
				return []string{s}
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && byName[x.Name] != nil {
				if s, ok := byName[x.Name].consts[e.Sel.Name]; ok {
					return []string{s}
				}
			}
		case *ast.CallExpr:
			if fn, ok := e.Fun.(*ast.Ident); ok && p.funcs[fn.Name] != nil {
				var out []string
				ast.Inspect(p.funcs[fn.Name].Body, func(n ast.Node) bool {
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						out = append(out, strs(p, r.Results[0])...)
					}
					return true
				})
				return out
			}
		}
		return nil
	}
	var base []string
	if w := byName["wiring"]; w == nil || w.funcs["Metrics"] == nil {
		t.Fatal("no wiring.Metrics: where do the functions' emitters get their Function dimension?")
	} else {
		ast.Inspect(w.funcs["Metrics"].Body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				base = append(base, strs(w, kv.Key)...)
			}
			return true
		})
	}
	out := emitted{}
	for dir, p := range pkgs {
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isEmitter(sel.X) {
					return true
				}
				dimsFrom := map[string]int{"Count": 2, "Duration": 2, "Emit": 3}[sel.Sel.Name]
				if dimsFrom == 0 || len(call.Args) < dimsFrom {
					return true
				}
				names := strs(p, call.Args[0])
				dims := slices.Clone(base)
				for i := dimsFrom; i < len(call.Args); i += 2 {
					d := strs(p, call.Args[i])
					if len(d) != 1 {
						t.Errorf("%s: a dimension name that is not a constant", fset.Position(call.Pos()))
						return true
					}
					dims = append(dims, d[0])
				}
				if len(names) == 0 {
					t.Errorf("%s (%s): a metric name that is not a constant", fset.Position(call.Pos()), dir)
				}
				slices.Sort(dims)
				for _, name := range names {
					out[name] = append(out[name], strings.Join(dims, ","))
				}
				return true
			})
		}
	}
	return out
}

// isEmitter: x is a metrics emitter, as berth's components name theirs (w.metrics,
// d.Metrics).
func isEmitter(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.SelectorExpr:
		return strings.EqualFold(x.Sel.Name, "metrics")
	case *ast.Ident:
		return strings.EqualFold(x.Name, "metrics")
	}
	return false
}

func stringLit(e ast.Expr) (string, bool) {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
		s, err := strconv.Unquote(l.Value)
		return s, err == nil
	}
	return "", false
}

// searchSchema is a SEARCH expression's berth metric: {berth,Dim,...} MetricName="Name".
var searchSchema = regexp.MustCompile(`\{` + regexp.QuoteMeta(metrics.Namespace) + `,([^}]*)\}\s+MetricName="([^"]+)"`)

// drawnMetrics are the berth metrics a dashboard body draws: name and sorted dimension names,
// from its metric rows and its SEARCH expressions.
func drawnMetrics(t *testing.T, body string) [][2]string {
	t.Helper()
	var doc struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("the dashboard body is not JSON: %v", err)
	}
	var out [][2]string
	for _, w := range doc.Widgets {
		for _, row := range w.Properties.Metrics {
			if len(row) == 0 {
				continue
			}
			if m, ok := row[0].(map[string]any); ok {
				for _, sm := range searchSchema.FindAllStringSubmatch(fmt.Sprint(m["expression"]), -1) {
					dims := strings.Split(sm[1], ",")
					slices.Sort(dims)
					out = append(out, [2]string{sm[2], strings.Join(dims, ",")})
				}
				continue
			}
			if row[0] != metrics.Namespace || len(row) < 2 {
				continue
			}
			var dims []string
			for i := 2; i+1 < len(row); i += 2 {
				d, ok := row[i].(string)
				if !ok {
					break
				}
				dims = append(dims, d)
			}
			slices.Sort(dims)
			out = append(out, [2]string{fmt.Sprint(row[1]), strings.Join(dims, ",")})
		}
	}
	return out
}

// notEmitted lists the drawn metrics the code does not emit, with those dimensions.
func notEmitted(drawn [][2]string, code emitted) []string {
	var out []string
	for _, d := range drawn {
		if !slices.Contains(code[d[0]], d[1]) {
			out = append(out, fmt.Sprintf("%s {%s} (the code emits it with %q)", d[0], d[1], code[d[0]]))
		}
	}
	return out
}

// TestDashboardMetricsAreEmitted: every berth metric the dashboard draws, by name and
// dimensions, is one the code emits (read from the code, not from a list); every ${Name} the
// body refers to is a variable both the CDK stack and template.yaml give.
func TestDashboardMetricsAreEmitted(t *testing.T) {
	code := emittedMetrics(t)
	if len(code) < 10 || len(code["CreateDuration"]) == 0 {
		t.Fatalf("read only %d metrics from the code: %v", len(code), code)
	}
	body := DashboardBody()
	drawn := drawnMetrics(t, body)
	if len(drawn) < 15 {
		t.Fatalf("the dashboard draws %d berth metrics: %v", len(drawn), drawn)
	}
	for _, e := range notEmitted(drawn, code) {
		t.Errorf("the dashboard draws %s", e)
	}
	// The check can fail: a metric the code never emits, and one with a dimension it lacks.
	if bad := notEmitted([][2]string{{"CreateDuration", "Function,Op"}, {"NoSuchMetric", "Function"}}, code); len(bad) != 2 {
		t.Errorf("the check lets through %v", bad)
	}
	for _, m := range regexp.MustCompile(`\$\{([^}]+)\}`).FindAllStringSubmatch(body, -1) {
		if m[1] != "AWS::Region" && !slices.Contains(DashboardVariables, m[1]) {
			t.Errorf("the body refers to ${%s}, not a dashboard variable", m[1])
		}
	}
}
