package mpiboot

import (
	"testing"

	"github.com/gccl/gccl/internal/mpi"
	"github.com/stretchr/testify/assert"
)

// TestLauncherMismatch: a launcher that started more processes than MPI's
// world holds is reported, naming the variable and both sizes.
func TestLauncherMismatch(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	assert.Empty(t, launcherMismatch(env(), 1), "no launcher: a singleton")
	assert.Empty(t, launcherMismatch(env("OMPI_COMM_WORLD_SIZE", "4"), 4))
	assert.Empty(t, launcherMismatch(env("PMI_SIZE", "junk"), 1))
	w := launcherMismatch(env("PMI_SIZE", "4"), 1)
	assert.Contains(t, w, "PMI_SIZE=4")
	assert.Contains(t, w, "world of 1")
	assert.Contains(t, w, mpi.BuiltFor)
	assert.Contains(t, launcherMismatch(env("OMPI_COMM_WORLD_SIZE", "2"), 1), "Open MPI's mpirun")
}
