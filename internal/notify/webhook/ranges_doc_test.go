package webhook

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
)

// refusedTableHeader opens docs/api.md's table of refused ranges.
const refusedTableHeader = "| refused range | rule |"

// TestRefusedRangesDocumented keeps docs/api.md's table of refused ranges
// the same as refusedRanges: each range with its rule, in the same order,
// and no other.
func TestRefusedRangesDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), refusedTableHeader+"\n")
	if !ok {
		t.Fatalf("docs/api.md has no table headed %q", refusedTableHeader)
	}
	type row struct {
		prefix netip.Prefix
		rule   string
	}
	var documented []row
	for i, line := range strings.Split(table, "\n")[1:] { // after the |---| line
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		p, err := netip.ParsePrefix(strings.Trim(cells[0], "`"))
		if err != nil || len(cells) != 2 {
			t.Fatalf("docs/api.md, refused range %d: %q is not | `prefix` | rule |", i+1, line)
		}
		documented = append(documented, row{p, cells[1]})
	}
	var want []row
	var table2 strings.Builder
	for _, r := range refusedRanges {
		rule := r.name
		if r.embedsIPv4 {
			rule += ": refused as the IPv4 address in its last 32 bits is"
		}
		want = append(want, row{r.prefix, rule})
		fmt.Fprintf(&table2, "| `%s` | %s |\n", r.prefix, rule)
	}
	if !slices.Equal(documented, want) {
		t.Errorf("docs/api.md's refused ranges differ from refusedRanges; the table should read:\n%s\n|---|---|\n%s",
			refusedTableHeader, table2.String())
	}
}
