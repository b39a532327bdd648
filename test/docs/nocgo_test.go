package docs

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithoutCgo: a program importing mpiboot builds with CGO_ENABLED=0,
// and mpiboot.Init then says why there is no MPI and what to do.
func TestWithoutCgo(t *testing.T) {
	dir := writeMain(t, `package main

import (
	"fmt"

	"github.com/gccl/gccl/mpiboot"
)

func main() { fmt.Println(mpiboot.Init()) }
`)
	bin := filepath.Join(t.TempDir(), "nocgo")
	goTool(t, []string{"CGO_ENABLED=0"}, "build", "-o", bin, "./"+dir)
	out, err := exec.Command(bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "built without cgo (CGO_ENABLED=0)")
	assert.Contains(t, string(out), "comm.InitRank")
}
