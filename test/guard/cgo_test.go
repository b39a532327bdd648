package guard

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cgoHomes are the only packages (directories relative to the module root)
// that may import "C": one per C library, each reaching its library in its
// own way. A new binding (libucp) is one new row here.
var cgoHomes = map[string]string{
	"internal/cuda": "libcuda.so.1, dlopen'd with our own declarations",
	"internal/nccl": "libnccl.so.2 (gccl-perf's baseline), dlopen'd with our own declarations",
	"internal/mpi":  "MPI (Open MPI, or MPICH with -tags mpich), linked through pkg-config",
	"internal/ucx":  "libucp.so.0 (UCX, the network provider for InfiniBand/RoCE), dlopen'd with our own declarations",
}

// TestCgoOnlyInItsHomes: import "C" appears in no package but those of
// cgoHomes, under any build tags (the walk parses every .go file, so files
// for MPICH or for builds without cgo count too), and every home still uses
// cgo (a stale row fails as well).
func TestCgoOnlyInItsHomes(t *testing.T) {
	got := cgoDirs(t, "../..")
	for dir, files := range got {
		_, ok := cgoHomes[dir]
		assert.True(t, ok, "%s imports \"C\" (%s), but only %s may: move the C calls into the "+
			"package of their library, or add a row to cgoHomes for a new library", dir,
			strings.Join(files, ", "), strings.Join(slices.Sorted(maps.Keys(cgoHomes)), ", "))
	}
	for dir, lib := range cgoHomes {
		assert.NotEmpty(t, got[dir], "%s is the home of %s but has no cgo file; drop its row", dir, lib)
	}
}

// TestCgoGuardFails: the walk finds import "C" in a package outside the
// homes, whatever its build constraint, and ignores testdata.
func TestCgoGuardFails(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		p := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	write("go.mod", "module example.com/m\n")
	write("internal/cuda/load.go", "package cuda\n\n// #include <stdlib.h>\nimport \"C\"\n")
	write("transport/shm/futex.go", "//go:build linux && mpich\n\npackage shm\n\nimport (\n\t\"os\"\n\t\"C\"\n)\n\nvar _ = os.Getpid\n")
	write("transport/shm/ring.go", "package shm\n")
	write("transport/shm/testdata/x.go", "package x\n\nimport \"C\"\n")
	got := cgoDirs(t, root)
	assert.Equal(t, map[string][]string{
		"internal/cuda": {"load.go"},
		"transport/shm": {"futex.go"},
	}, got)
}

// cgoDirs returns, for each package directory under root (relative, with
// slashes) holding a .go file that imports "C", those files' names.
func cgoDirs(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "C" {
				rel, err := filepath.Rel(root, filepath.Dir(path))
				if err != nil {
					return err
				}
				dir := filepath.ToSlash(rel)
				out[dir] = append(out[dir], name)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}
