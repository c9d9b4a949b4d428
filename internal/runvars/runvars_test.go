package runvars

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	values := map[string]string{"USERID": "alice", "WORKSPACE_PATH": "/srv/ws/alice", "GROUP": ""}
	cases := []struct {
		in, want string
		unknown  bool
		syntax   bool
	}{
		{in: "plain", want: "plain"},
		{in: "$USERID", want: "alice"},
		{in: "${USERID}-x", want: "alice-x"},
		{in: "$WORKSPACE_PATH/data", want: "/srv/ws/alice/data"},
		{in: "cost $$5", want: "cost $5"},
		{in: "g=$GROUP.", want: "g=."},
		{in: "$HOME", unknown: true},
		{in: "${PATH}:$USERID", unknown: true},
		{in: "$", syntax: true},
		{in: "${USERID", syntax: true},
		{in: "${1X}", syntax: true},
		{in: "$-", syntax: true},
	}
	for _, tc := range cases {
		got, err := Expand(tc.in, values)
		var ue *UnknownError
		var se *SyntaxError
		switch {
		case tc.unknown:
			if !errors.As(err, &ue) {
				t.Errorf("Expand(%q) err = %v, want unknown variable", tc.in, err)
			}
		case tc.syntax:
			if !errors.As(err, &se) {
				t.Errorf("Expand(%q) err = %v, want syntax error", tc.in, err)
			}
		default:
			if err != nil || got != tc.want {
				t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		}
	}
}

func TestNeverReadsProcessEnvironment(t *testing.T) {
	os.Setenv("BERTH_SECRET_FOR_TEST", "leak")
	defer os.Unsetenv("BERTH_SECRET_FOR_TEST")
	if _, err := Expand("$BERTH_SECRET_FOR_TEST", nil); err == nil {
		t.Fatal("an undeclared variable expanded")
	}
	if err := Check("$HOME"); err == nil {
		t.Fatal("Check accepted $HOME")
	}
	if err := Check("$USERID/$CONTAINER_NAME"); err != nil {
		t.Fatal(err)
	}
}

func TestDeclaredHaveDescriptions(t *testing.T) {
	for _, v := range Declared {
		if v.Description == "" || !IsDeclared(v.Name) {
			t.Errorf("%s: missing description or not declared", v.Name)
		}
	}
}

// TestDocumented keeps docs/api.md's table of variables in step with
// Declared: each variable with its description, and no other.
func TestDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, v := range Declared {
		row := "| `$" + v.Name + "` | " + v.Description + " |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/api.md lacks the row %q", row)
		}
	}
	rows := regexp.MustCompile("(?m)^\\| `\\$([A-Z_]+)` \\|").FindAllStringSubmatch(doc, -1)
	if len(rows) != len(Declared) {
		t.Errorf("docs/api.md lists %d variables, the code declares %d", len(rows), len(Declared))
	}
}

// TestByUser: the variables whose value the creating user picks, however
// they are written.
func TestByUser(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"data", nil},
		{"vol-$USERID-$CONTAINER_ID-$TEMPLATE", nil},
		{"$CONTAINER_NAME", []string{"CONTAINER_NAME"}},
		{"g-${GROUP}-$CONTAINER_NAME-$CONTAINER_NAME", []string{"CONTAINER_NAME", "GROUP"}},
		{"$$CONTAINER_NAME", nil}, // a literal '$'
		{"${CONTAINER_NAME", nil}, // malformed: Check's to report
	}
	for _, c := range cases {
		if got := ByUser(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ByUser(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
