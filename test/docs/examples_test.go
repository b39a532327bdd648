package docs

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamplesImportOnlyPublicPackages: an example copied into another
// module must build there, so it may not import gccl's internal packages.
func TestExamplesImportOnlyPublicPackages(t *testing.T) {
	files, err := filepath.Glob("../../examples/mpi/*/*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal"),
				"%s imports %s, which a program outside gccl cannot import", f, path)
		}
	}
}
