// Command docrefs fails when a doc names a repository path, a Go file, a Go package-qualified name or a
// section of another doc that does not exist in the tree. `make lint` runs it from the repository root:
//
//	go run ./scripts/docrefs
//
// It reads README.md and docs/*.md and checks, line by line:
//
//   - Repository paths: a token whose first element is one of the repository's top-level directories
//     (internal/, cmd/, functions/, scripts/, infra/, docs/, testdata/, events/) must exist as written,
//     after the module path prefix (github.com/berth-io/berth/), trailing punctuation, a :line suffix and
//     a #anchor are stripped. Tokens with a placeholder or a glob (<fn>, {id}, *, $VAR, …) are skipped,
//     as are build outputs (infra/cdk.out). A relative link (./x, ../x) is resolved from the doc's
//     directory.
//   - Go files named relative to a package: a token ending in .go whose first element is the name of a
//     directory of the tree that holds Go files (manager/templatecache.go, dynamostore/shards.go) must
//     exist under one of the directories of that name. Other slashed words (create/start, p50/p99,
//     api/containers) are not paths and are not checked.
//   - Package-qualified names: pkg.Name with Name exported. When pkg is the name of a package directory
//     of the tree, Name must be declared at its top level (func, type, var, const, an interface's
//     method) or as a method in one of the packages of that name (docs write manager.OnEvent for
//     (*manager.Manager).OnEvent); pkg.Type.Method and pkg.Type.Field check Type. Otherwise pkg must be
//     a name the tree's Go files import (http.Client, a dependency's package); a one-letter pkg is a
//     variable (t.Parallel) and is not checked.
//   - Links to a section of a doc (other.md#anchor, #anchor): the doc must have a heading with that
//     GitHub anchor, or an explicit <a id/name> anchor.
//
// Each failure prints doc:line and what is missing; the exit status is 1 if any.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// topDirs are the repository's top-level directories: a token starting with one of them is a path.
var topDirs = []string{"internal", "cmd", "functions", "scripts", "infra", "docs", "testdata", "events"}

// generated are paths that exist only after a build; a reference to them is not checked.
var generated = []string{"infra/cdk.out", "dist", "bin"}

const modulePrefix = "github.com/berth-io/berth/"

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docrefs:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("docrefs: %d reference(s) to paths, names or sections that do not exist\n", len(problems))
		os.Exit(1)
	}
}

// tree is what the docs may name: Go package directories by name, their top-level declarations, and
// the anchors of each doc.
type tree struct {
	root    string
	pkgDirs map[string][]string        // package directory name -> directories (slash, relative to root)
	decls   map[string]map[string]bool // package directory name -> top-level names of its packages
	imports map[string]bool            // names the tree's Go files import packages under
	anchors map[string]map[string]bool // doc (slash, relative to root) -> anchors
}

func check(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	}
	t, err := loadTree(root)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, doc := range docs {
		rel, _ := filepath.Rel(root, doc)
		ps, err := t.checkDoc(filepath.ToSlash(rel))
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	return problems, nil
}

func loadTree(root string) (*tree, error) {
	t := &tree{root: root, pkgDirs: map[string][]string{}, decls: map[string]map[string]bool{},
		anchors: map[string]map[string]bool{}, imports: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "cdk.out" ||
				name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		base := path.Base(dir)
		if dir == "." {
			return nil
		}
		if _, ok := t.decls[base]; !ok {
			t.decls[base] = map[string]bool{}
		}
		if !contains(t.pkgDirs[base], dir) {
			t.pkgDirs[base] = append(t.pkgDirs[base], dir)
		}
		// A file with syntax errors still gives what it declares (go vet reports the errors); only a
		// file that cannot be read stops the check.
		f, perr := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if f == nil {
			return perr
		}
		for _, imp := range f.Imports {
			name := path.Base(strings.Trim(imp.Path.Value, `"`))
			if imp.Name != nil {
				name = imp.Name.Name
			}
			t.imports[name] = true
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				// Docs name a method by its package too (manager.OnEvent for (*Manager).OnEvent).
				t.decls[base][d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						t.decls[base][s.Name.Name] = true
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									t.decls[base][n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							t.decls[base][n.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	return t, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var (
	// pathToken is a run of the characters a path, a placeholder or a glob is made of.
	pathToken = regexp.MustCompile(`[A-Za-z0-9_.\-/<>{}*$…~]+`)
	// qualified is pkg.Name[.Name], not inside a longer dotted or slashed word.
	qualified = regexp.MustCompile(`(^|[^A-Za-z0-9_./\-])([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)`)
	// link is a Markdown link's target.
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlID  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	fence   = regexp.MustCompile("^\\s*(```|~~~)")
)

func (t *tree) checkDoc(doc string) ([]string, error) {
	f, err := os.Open(filepath.Join(t.root, filepath.FromSlash(doc)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var problems []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		at := fmt.Sprintf("%s:%d", doc, n)
		seen := map[string]bool{}
		report := func(msg string) {
			if !seen[msg] {
				seen[msg] = true
				problems = append(problems, at+": "+msg)
			}
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			if msg := t.checkLink(doc, m[1]); msg != "" {
				report(msg)
			}
		}
		for _, tok := range pathToken.FindAllString(line, -1) {
			if msg := t.checkPath(doc, tok); msg != "" {
				report(msg)
			}
		}
		for _, m := range qualified.FindAllStringSubmatch(line, -1) {
			if msg := t.checkQualified(m[2], m[3]); msg != "" {
				report(msg)
			}
		}
	}
	return problems, sc.Err()
}

// cleanPath strips what may follow a path in prose: trailing punctuation, a :line suffix (the tokenizer
// already split at ':' and '#') and the module prefix. It returns "" for a token that is no path to
// check.
func cleanPath(tok string) string {
	tok = strings.TrimPrefix(tok, modulePrefix)
	if strings.ContainsAny(tok, "<>{}*$…~") || strings.Contains(tok, "...") {
		return ""
	}
	tok = strings.TrimRight(tok, ".,;-")
	return tok
}

func (t *tree) checkPath(doc, tok string) string {
	p := cleanPath(tok)
	if p == "" || !strings.Contains(p, "/") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return ""
	}
	// ./cmd/berth in a command is relative to the root, where make and go run; a Markdown link's
	// relative target is checked by checkLink.
	p = strings.TrimPrefix(p, "./")
	if strings.HasPrefix(p, "../") || strings.HasPrefix(p, ".") {
		return ""
	}
	first := strings.SplitN(p, "/", 2)[0]
	if contains(topDirs, first) {
		return t.mustExist(p, "")
	}
	// A Go file named relative to its package directory.
	if !strings.HasSuffix(p, ".go") {
		return ""
	}
	dirs, ok := t.pkgDirs[first]
	if !ok {
		return ""
	}
	rest := strings.TrimPrefix(p, first)
	var tried []string
	for _, d := range dirs {
		if t.exists(d + rest) {
			return ""
		}
		tried = append(tried, d+rest)
	}
	// and as written, in case it is relative to the root after all
	if t.exists(p) {
		return ""
	}
	sort.Strings(tried)
	return fmt.Sprintf("%s: no such file (tried %s)", p, strings.Join(append([]string{p}, tried...), ", "))
}

func (t *tree) mustExist(p, what string) string {
	p = strings.TrimSuffix(p, "/")
	for _, g := range generated {
		if p == g || strings.HasPrefix(p, g+"/") {
			return ""
		}
	}
	if t.exists(p) {
		return ""
	}
	if what == "" {
		what = "no such file or directory"
	}
	return p + ": " + what
}

func (t *tree) exists(p string) bool {
	_, err := os.Stat(filepath.Join(t.root, filepath.FromSlash(p)))
	return err == nil
}

func (t *tree) checkQualified(pkg, name string) string {
	if len(pkg) < 2 {
		return "" // a variable (t.Parallel), not a package
	}
	decls, ok := t.decls[pkg]
	if !ok {
		if t.imports[pkg] {
			return "" // a dependency's or the standard library's
		}
		return fmt.Sprintf("%s.%s: no package %s in the tree or among its imports", pkg, name, pkg)
	}
	if decls[name] {
		return ""
	}
	dirs := append([]string(nil), t.pkgDirs[pkg]...)
	sort.Strings(dirs)
	return fmt.Sprintf("%s.%s: no top-level %s in %s", pkg, name, name, strings.Join(dirs, ", "))
}

// checkLink checks the #anchor of a link to a doc of the repository (the path itself is checked as a
// path token).
func (t *tree) checkLink(doc, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	if file != "" {
		p := path.Join(path.Dir(doc), file)
		if strings.HasPrefix(p, "../") {
			return ""
		}
		if msg := t.mustExist(p, "link to nothing"); msg != "" {
			return msg
		}
	}
	if anchor == "" {
		return ""
	}
	target = doc
	if file != "" {
		target = path.Join(path.Dir(doc), file)
	}
	if !strings.HasSuffix(target, ".md") {
		return ""
	}
	anchors, err := t.anchorsOf(target)
	if err != nil {
		return target + ": no such doc"
	}
	if !anchors[strings.ToLower(anchor)] {
		return fmt.Sprintf("%s#%s: no such section", target, anchor)
	}
	return ""
}

func (t *tree) anchorsOf(doc string) (map[string]bool, error) {
	if a, ok := t.anchors[doc]; ok {
		return a, nil
	}
	data, err := os.ReadFile(filepath.Join(t.root, filepath.FromSlash(doc)))
	if err != nil {
		return nil, err
	}
	a := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			a[strings.ToLower(m[1])] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if c := count[s]; c > 0 {
				a[fmt.Sprintf("%s-%d", s, c)] = true
			} else {
				a[s] = true
			}
			count[s]++
		}
	}
	t.anchors[doc] = a
	return a, nil
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
func slug(h string) string {
	h = regexp.MustCompile("`|\\*\\*|\\[([^]]*)\\]\\([^)]*\\)").ReplaceAllStringFunc(h, func(s string) string {
		if strings.HasPrefix(s, "[") {
			return s[1:strings.Index(s, "]")]
		}
		return ""
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
