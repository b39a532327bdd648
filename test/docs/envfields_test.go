package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryDocumentedVariableHasAnEffect: each variable of the README's
// table is one internal/env reads into a Settings field, and that field is
// read somewhere in the library (not merely assigned): no setting is
// accepted and ignored.
func TestEveryDocumentedVariableHasAnEffect(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	field := map[string]string{}
	for _, v := range env.Vars {
		field[v.Name] = v.Field
	}
	read := fieldReads(t, "../..")
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, "| `GCCL_") {
			continue
		}
		n++
		name := strings.Trim(strings.Split(line, "|")[1], " `")
		f, ok := field[name]
		if assert.True(t, ok, "README documents %s, which internal/env does not read", name) {
			assert.True(t, read[f], "%s sets Settings.%s, which no library code reads", name, f)
		}
	}
	assert.Greater(t, n, 10, "the README's variable table was not found")
}

// fieldReads returns the names of every selector read (x.Name outside the
// left side of an assignment) in the non-test Go files under root.
func fieldReads(t *testing.T, root string) map[string]bool {
	read := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		assigned := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if a, ok := n.(*ast.AssignStmt); ok {
				for _, l := range a.Lhs {
					assigned[l] = true
				}
			}
			if s, ok := n.(*ast.SelectorExpr); ok && !assigned[s] {
				read[s.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	return read
}
