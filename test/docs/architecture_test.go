package docs

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/gccl/gccl"

// TestArchitectureListsEveryPackage: docs/architecture.md's package table
// names every package of go list ./... exactly once, with a purpose, and
// nothing else. A package added, moved or removed needs its row changed.
func TestArchitectureListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	rows, err := packageRows(string(b))
	require.NoError(t, err)

	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...")
	var listed []string
	for _, p := range strings.Fields(string(out)) {
		listed = append(listed, docName(p))
	}

	seen := map[string]bool{}
	for _, r := range rows {
		assert.False(t, seen[r.pkg], "docs/architecture.md lists %s twice", r.pkg)
		seen[r.pkg] = true
		assert.NotEmpty(t, r.purpose, "docs/architecture.md: %s has no purpose", r.pkg)
		assert.True(t, slices.Contains(listed, r.pkg), "docs/architecture.md lists %s, which go list does not: drop or rename its row", r.pkg)
	}
	for _, p := range listed {
		assert.True(t, seen[p], "go list has %s, which docs/architecture.md's package table does not list: add a row with its purpose", p)
	}
}

// TestPackageRows: the parser reads the table under "## Packages" only.
func TestPackageRows(t *testing.T) {
	doc := "# x\n| `a` | not the table |\n## Packages\n| package | purpose |\n|---|---|\n| `gccl` | root |\n| `b/c` | what c does |\n| `d` |  |\n\n## Next\n| `e` | later |\n"
	rows, err := packageRows(doc)
	require.NoError(t, err)
	assert.Equal(t, []pkgRow{{"gccl", "root"}, {"b/c", "what c does"}, {"d", ""}}, rows)
	_, err = packageRows("# no table\n")
	assert.Error(t, err)
}

type pkgRow struct{ pkg, purpose string }

// packageRows returns the rows of the table in the "## Packages" section:
// `package` | purpose.
func packageRows(doc string) ([]pkgRow, error) {
	_, section, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		return nil, os.ErrNotExist
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var rows []pkgRow
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		rows = append(rows, pkgRow{strings.Trim(cells[1], " `"), strings.TrimSpace(cells[2])})
	}
	if len(rows) == 0 {
		return nil, os.ErrNotExist
	}
	return rows, nil
}

// docName is how the table names an import path: relative to the module,
// the module itself as gccl.
func docName(path string) string {
	if path == module {
		return "gccl"
	}
	return strings.TrimPrefix(path, module+"/")
}
