package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/testbed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunPlacesRanks: run starts -per ranks in each host, rank r in host
// r/per (its host name), with its place in the environment.
func TestRunPlacesRanks(t *testing.T) {
	state := t.TempDir()
	check := `[ "$(cat /proc/sys/kernel/hostname)" = "bed$GCCL_BED_HOST" ] && [ $GCCL_BED_HOST = $((GCCL_BED_RANK / 2)) ] && [ $GCCL_BED_NRANKS = 6 ] && [ -n "$GCCL_BED_ID_FILE" ]`
	require.NoError(t, runCmd([]string{"-hosts", "3", "-per", "2", "-state", state, "-timeout", "30s", "--", "sh", "-c", check}, false))
	err := runCmd([]string{"-hosts", "2", "-state", state, "-timeout", "30s", "--", "sh", "-c", "exit $GCCL_BED_RANK"}, false)
	require.Error(t, err, "rank 1 exits 1: the run must fail")
	assert.Contains(t, err.Error(), "rank 1 (host bed1): exit status 1")
	dirs, _ := filepath.Glob(filepath.Join(state, "bed-*"))
	assert.Empty(t, dirs, "beds left behind")
}

// TestWithAndExec: a command under "with" sees GCCL_BED, and "exec"
// enters the host it names.
func TestWithAndExec(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gccl-bed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	state := t.TempDir()
	cmd := exec.Command(bin, "with", "-hosts", "3", "-state", state, "--",
		"sh", "-c", bin+` exec -host 2 -- cat /proc/sys/kernel/hostname; OMPI_COMM_WORLD_RANK=3 `+bin+` exec -per 2 -- cat /proc/sys/kernel/hostname`)
	cmd.Env = append(os.Environ(), testbed.EnvDir+"=") // not inside another bed
	out, err = cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "bed2\nbed1\n", string(out))
	outside := exec.Command(bin, "exec", "-host", "0", "--", "true")
	outside.Env = append(os.Environ(), testbed.EnvDir+"=")
	out, err = outside.CombinedOutput()
	require.Error(t, err, "exec outside a bed must fail")
	assert.True(t, strings.Contains(string(out), "GCCL_BED is not set"), "%s", out)
}
