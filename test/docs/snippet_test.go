package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEProgramBuildsAndRuns: the README's "Using it" block is a whole
// program. It is written into a directory of this module, vetted, built
// (that links MPI) and run as a one-process MPI job on the host backend.
func TestREADMEProgramBuildsAndRuns(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src := goBlockAfter(t, string(b), "## Using it")
	require.Contains(t, src, "package main")

	dir := writeMain(t, src)
	bin := filepath.Join(t.TempDir(), "readme")
	goTool(t, nil, "vet", "./"+dir)
	goTool(t, nil, "build", "-o", bin, "./"+dir)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "GCCL_DEVICE=host")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "rank 0 of 1: sum = 0")
}

// goBlockAfter returns the first ```go block after the heading.
func goBlockAfter(t *testing.T, doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	require.True(t, ok, "README has no %q section", heading)
	_, rest, ok = strings.Cut(rest, "```go\n")
	require.True(t, ok, "no go block after %q", heading)
	src, _, ok := strings.Cut(rest, "\n```")
	require.True(t, ok, "unterminated go block after %q", heading)
	return src + "\n"
}

// writeMain writes src as main.go of a new directory of this module (its
// name starts with _, so ./... skips it) and returns the directory.
func writeMain(t *testing.T, src string) string {
	dir, err := os.MkdirTemp(".", "_readme")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	return dir
}

// goTool runs the go command with extra environment variables.
func goTool(t *testing.T, env []string, args ...string) {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
}
