// Package runvars declares the runtime variables a template may use
// ($USERID, $WORKSPACE_PATH, …) and expands them. Values come only from the
// declared list, filled in for one instance: never from the server's own
// environment, so a template cannot read the control plane's secrets.
package runvars

import (
	"fmt"
	"sort"
	"strings"
)

// Var is a declared runtime variable.
type Var struct {
	Name        string
	Description string
	// ByUser: the user who creates the instance picks the value (its name,
	// its group), so a user may make it anything, even another user's
	// value. berth picks the others (the owner's id, the instance id), or
	// the template's admin (its name).
	ByUser bool
}

// Declared is the list of variables templates may use, in the order the
// documentation shows them.
var Declared = []Var{
	{"USERID", "the owner's user id (the JWT sub claim, or the local token's user)", false},
	{"WORKSPACE_PATH", "the owner's workspace directory: container.workspace_root/<user id>", false},
	{"CONTAINER_ID", "the instance id (a ULID)", false},
	{"CONTAINER_NAME", "the instance name", true},
	{"TEMPLATE", "the template name", false},
	{"GROUP", "the instance's group, empty when it has none", true},
	{"RUNTIME", "the runtime kind: docker or kubernetes", false},
}

var declared = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range Declared {
		m[v.Name] = true
	}
	return m
}()

// IsDeclared reports whether name is a declared variable.
func IsDeclared(name string) bool { return declared[name] }

// ByUser returns the variables s references whose value the creating user
// picks (Var.ByUser), each once, in the order of Declared; nil when s
// references none or is malformed (Check reports that).
func ByUser(s string) []string {
	used := map[string]bool{}
	if _, err := expand(s, func(name string) string { used[name] = true; return "" }); err != nil {
		return nil
	}
	var out []string
	for _, v := range Declared {
		if v.ByUser && used[v.Name] {
			out = append(out, v.Name)
		}
	}
	return out
}

// UnknownError names variables that are not declared.
type UnknownError struct{ Names []string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown runtime variable(s): $%s (declared: %s)", strings.Join(e.Names, ", $"), declaredList())
}

func declaredList() string {
	names := make([]string, len(Declared))
	for i, v := range Declared {
		names[i] = "$" + v.Name
	}
	return strings.Join(names, ", ")
}

// SyntaxError is a malformed reference such as "${USERID" or "$".
type SyntaxError struct{ Input, Reason string }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("runtime variables in %q: %s", e.Input, e.Reason)
}

// Check reports an *UnknownError or *SyntaxError if s references anything
// but declared variables. It needs no values, so templates are checked when
// they are written.
func Check(s string) error {
	_, err := expand(s, nil)
	return err
}

// Expand substitutes $NAME and ${NAME} with values[NAME]; "$$" is a literal
// "$". Every referenced name must be declared; a declared name missing from
// values expands to "".
func Expand(s string, values map[string]string) (string, error) {
	return expand(s, func(name string) string { return values[name] })
}

// expand substitutes s's references with value's answers; a nil value
// only checks s.
func expand(s string, value func(name string) string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	var unknown []string
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", &SyntaxError{s, "a lone $ at the end (write $$ for a literal $)"}
		}
		var name string
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i += 2
			continue
		case next == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", &SyntaxError{s, "unclosed ${"}
			}
			name = s[i+2 : i+2+end]
			i += 2 + end + 1
			if !validName(name) {
				return "", &SyntaxError{s, fmt.Sprintf("bad variable name %q", name)}
			}
		case isNameStart(next):
			j := i + 1
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			name = s[i+1 : j]
			i = j
		default:
			return "", &SyntaxError{s, fmt.Sprintf("$ followed by %q (write $$ for a literal $)", next)}
		}
		if !declared[name] {
			unknown = append(unknown, name)
			continue
		}
		if value != nil {
			b.WriteString(value(name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", &UnknownError{Names: unknown}
	}
	return b.String(), nil
}

func isNameStart(c byte) bool { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') }
func isNameChar(c byte) bool  { return isNameStart(c) || (c >= '0' && c <= '9') }

func validName(n string) bool {
	if n == "" || !isNameStart(n[0]) {
		return false
	}
	for i := 1; i < len(n); i++ {
		if !isNameChar(n[i]) {
			return false
		}
	}
	return true
}
