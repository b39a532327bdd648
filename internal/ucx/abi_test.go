package ucx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayoutMatchesHeaders compiles testdata/layout.c twice, against
// UCX's headers and against shim.c's own declarations, and requires the
// same offsets and sizes. It needs UCX's headers (libucx-dev), which the
// build itself never does; without them it skips.
func TestLayoutMatchesHeaders(t *testing.T) {
	if _, err := os.Stat("/usr/include/ucp/api/ucp.h"); err != nil {
		t.Skip("UCX's headers are not installed (libucx-dev): nothing to compare shim.c with")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	run := func(real bool) string {
		bin := filepath.Join(t.TempDir(), "layout")
		args := []string{"-o", bin, "testdata/layout.c", "-ldl"}
		if real {
			args = append([]string{"-DREAL"}, args...)
		}
		out, err := exec.Command(gcc, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		out, err = exec.Command(bin).Output()
		require.NoError(t, err)
		return string(out)
	}
	real, ours := run(true), run(false)
	assert.Equal(t, real, ours, "shim.c's declarations differ from UCX's headers")
	t.Logf("layout:\n%s", ours)
}
