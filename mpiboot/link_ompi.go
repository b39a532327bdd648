//go:build cgo && !mpich

package mpiboot

// Open MPI (the default): its pkg-config module is "ompi" everywhere Open MPI
// is installed, while "mpi" exists only where Debian's alternatives point it
// at one implementation or the other.

/*
#cgo pkg-config: ompi
*/
import "C"

// builtFor names the MPI this binary links, for launcherMismatch.
const (
	builtFor    = "Open MPI"
	rebuildHint = "go build -tags mpich for MPICH"
)
