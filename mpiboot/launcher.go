package mpiboot

import (
	"fmt"
	"strconv"

	"github.com/gccl/gccl/internal/mpi"
)

// launcherSizes are the variables launchers set to the number of processes
// they started: Open MPI's mpirun, MPICH's (Hydra) mpiexec, PMIx launchers.
var launcherSizes = []struct{ name, launcher string }{
	{"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
	{"PMI_SIZE", "an MPICH (Hydra/PMI) launcher"},
	{"PMIX_SIZE", "a PMIx launcher"},
}

// launcherMismatch returns a warning when the launcher's environment says
// it started more processes than MPI reports in its world: the typical sign
// of a binary built for one MPI implementation started by another's
// launcher, where every process runs alone as a 1-process world. It returns
// "" when nothing is wrong or nothing is known.
func launcherMismatch(lookup func(string) (string, bool), size int) string {
	for _, v := range launcherSizes {
		s, ok := lookup(v.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= size {
			continue
		}
		return fmt.Sprintf("%s=%d: %s started %d processes, but MPI reports a world of %d; "+
			"this binary links %s: launch it with that implementation's mpirun/mpiexec, or rebuild it for the launcher's MPI (%s)",
			v.name, n, v.launcher, n, size, mpi.BuiltFor, mpi.RebuildHint)
	}
	return ""
}
